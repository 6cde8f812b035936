package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"

	"github.com/tenurekv/tenure/impl/disk"
)

func TestZeroedSegmentsAndSpares(t *testing.T) {
	dir := t.TempDir()
	v := &zeroedVFS{FS: disk.OS{}}
	defer v.Close()
	const size = 1 << 20
	allZero := func(name string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != size || !bytes.Equal(b, make([]byte, size)) {
			t.Fatalf("%s: %d bytes, not %d zeros", name, len(b), size)
		}
	}

	f, err := v.Create(dir, "a.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	allZero("a.wal")
	if _, err := f.WriteAt([]byte("first half"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	v.done.Wait()
	if _, err := os.Stat(filepath.Join(dir, spareName)); err == nil {
		t.Fatal("a spare was prepared before the segment was half written")
	}
	if _, err := f.WriteAt([]byte("second half"), size/2); err != nil {
		t.Fatal(err)
	}
	v.done.Wait()
	if v.prepErr != nil {
		t.Fatal(v.prepErr)
	}
	allZero(spareName)

	g, err := v.Create(dir, "b.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); err == nil {
		t.Fatal("the spare is still there after the next segment was created")
	}
	allZero("b.wal")
	for _, h := range []interface{ Close() error }{f, g} {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// An existing name is refused, as raft-wal's own create refuses it, and
	// the spare stays.
	if err := prepareSpare(disk.OS{}, dir, size, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Create(dir, "b.wal", size); err == nil {
		t.Fatal("a segment was created over an existing one")
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); err != nil {
		t.Fatalf("the spare went with the refused create: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, spareName)); err != nil {
		t.Fatal(err)
	}
	// A spare of another size is not taken.
	if err := prepareSpare(disk.OS{}, dir, size/2, nil); err != nil {
		t.Fatal(err)
	}
	h, err := v.Create(dir, "c.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	allZero("c.wal")
	if _, err := os.Stat(filepath.Join(dir, spareName)); err != nil {
		t.Fatal("a spare of the wrong size was used")
	}
}

// raft-wal over zero-filled segments rotates, reopens and reads back every
// entry: it finds the end of a segment's data as it does on a fallocated one.
func TestWALOnZeroedSegments(t *testing.T) {
	dir := t.TempDir()
	open := func() (*wal.WAL, func()) {
		v := &zeroedVFS{FS: disk.OS{}}
		meta := &metadb.BoltMetaDB{}
		w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(64<<10),
			wal.WithSegmentFiler(segment.NewFiler(dir, v)))
		if err != nil {
			t.Fatal(err)
		}
		return w, func() {
			if err := w.Close(); err != nil {
				t.Error(err)
			}
			if err := meta.Close(); err != nil {
				t.Error(err)
			}
			_ = v.Close()
		}
	}
	data := func(i uint64) []byte { return []byte(fmt.Sprintf("entry %d %0300d", i, i)) }
	w, closeWAL := open()
	const n = 1000
	for i := uint64(1); i <= n; i += 10 {
		logs := make([]*raft.Log, 0, 10)
		for j := i; j < i+10; j++ {
			logs = append(logs, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: data(j)})
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	closeWAL()
	segments, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	if len(segments) < 4 {
		t.Fatalf("%d segments: the log never rotated", len(segments))
	}
	w, closeWAL = open()
	defer closeWAL()
	if last, err := w.LastIndex(); err != nil || last != n {
		t.Fatalf("last index after reopening: %d, %v", last, err)
	}
	for i := uint64(1); i <= n; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.Equal(l.Data, data(i)) {
			t.Fatalf("entry %d came back as %q", i, l.Data)
		}
	}
	if err := w.StoreLogs([]*raft.Log{{Index: n + 1, Term: 1, Type: raft.LogCommand, Data: data(n + 1)}}); err != nil {
		t.Fatalf("append after reopening: %v", err)
	}
}

// A preparation that fails is logged; the next create fills on the spot.
func TestSparePreparationFailureIsLogged(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	v := &zeroedVFS{FS: disk.OS{}, logger: hclog.New(&hclog.LoggerOptions{Output: &logs})}
	defer v.Close()
	// A directory where the temporary file must go makes its create fail.
	if err := os.Mkdir(filepath.Join(dir, spareName+".tmp"), 0o750); err != nil {
		t.Fatal(err)
	}
	v.prepare(dir, 1<<16)
	v.done.Wait()
	if v.prepErr == nil || !strings.Contains(logs.String(), "next log segment not prepared") {
		t.Fatalf("failure %v, log %q", v.prepErr, logs.String())
	}
	f, err := v.Create(dir, "a.wal", 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := os.Stat(filepath.Join(dir, "a.wal")); err != nil || fi.Size() != 1<<16 {
		t.Fatalf("segment after a failed preparation: %v, %v", fi, err)
	}
}

// Closing the store stops a preparation between chunks and leaves neither
// a spare nor its temporary file, and says nothing of it in the log.
func TestSparePreparationStopsOnClose(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	v := &zeroedVFS{FS: disk.OS{}, logger: hclog.New(&hclog.LoggerOptions{Output: &logs})}
	// 32 chunks with a pause after each but the last: the preparation
	// cannot finish before the Close just below it.
	v.prepare(dir, 32*spareChunk)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(v.prepErr, errSpareAbandoned) {
		t.Fatalf("preparation ended with %v, want %v", v.prepErr, errSpareAbandoned)
	}
	for _, name := range []string{spareName, spareName + ".tmp"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after an abandoned preparation: %v", name, err)
		}
	}
	if logs.Len() > 0 {
		t.Errorf("an abandoned preparation was logged: %q", logs.String())
	}
}

// A spare whose size is not a whole number of chunks is all zeros to its end.
func TestSpareOfPartialChunk(t *testing.T) {
	dir := t.TempDir()
	const size = 3 * spareChunk / 2
	if err := prepareSpare(disk.OS{}, dir, size, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, spareName))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || !bytes.Equal(b, make([]byte, size)) {
		t.Fatalf("spare of %d bytes is not %d zeros", len(b), size)
	}
}

// A preparation a crash cut short leaves its temporary file, and a crash
// between takeSpare's link and its removal leaves the spare's name on a
// segment in use; opening the log removes both (the next rotation would
// otherwise take that segment again and write over its header).
func TestOpenRemovesUnfinishedSpare(t *testing.T) {
	dir := t.TempDir()
	tmp, spare := filepath.Join(dir, spareName+".tmp"), filepath.Join(dir, spareName)
	for _, name := range []string{tmp, spare} {
		if err := os.WriteFile(name, make([]byte, 4096), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	dl, err := openDurableLog(dir, hclog.NewNullLogger(), durableLogOptions{manualFlush: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := closeAll(dl.closers); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unfinished spare after open: %v", err)
	}
	if _, err := os.Stat(spare); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a spare from before the open is still there: %v", err)
	}
}
