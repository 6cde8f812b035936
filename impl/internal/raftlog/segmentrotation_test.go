package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"github.com/tenurekv/tenure/impl/disk"
)

// refusingMeta fails every meta commit once refuse is set, as a process
// that dies before raft-wal's background rotation commits.
type refusingMeta struct {
	types.MetaStore
	refuse *atomic.Bool
}

func (m refusingMeta) CommitState(st types.PersistentState) error {
	if m.refuse.Load() {
		return errPowerLost
	}
	return m.MetaStore.CommitState(st)
}

// interruptRotation writes entries of size bytes to a new log in dir until
// the append that fills the tail segment seals it, with every meta commit
// refused from the start, so the rotation that should follow never
// commits. It returns the last entry stored and the content of each entry.
func interruptRotation(t *testing.T, dir string, size int) (last uint64, data func(uint64) []byte) {
	t.Helper()
	var refuse atomic.Bool
	dl, err := openDurableLog(dir, hclog.NewNullLogger(), durableLogOptions{
		wrapMeta:    func(m types.MetaStore) types.MetaStore { return refusingMeta{MetaStore: m, refuse: &refuse} },
		segmentSize: 16 << 10,
		manualFlush: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	data = func(i uint64) []byte { return fmt.Appendf(nil, "entry %d %0*d", i, size, i) }
	for i := uint64(1); ; i++ {
		if i > 1000 {
			t.Fatal("the tail segment never filled")
		}
		err := dl.logs.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: data(i)}})
		if err != nil {
			// The append after the seal finds the rotation failed (raft's
			// log cache keeps only the error's text).
			if !strings.Contains(err.Error(), types.ErrSealed.Error()) {
				t.Fatalf("store %d: %v, want the sealed tail's refusal", i, err)
			}
			break
		}
		last = i
	}
	if err := closeAll(dl.closers); err != nil {
		t.Fatal(err)
	}
	return last, data
}

// TestFinishRotation: a log whose tail segment was sealed by the append
// that filled it, while the rotation that should have followed never
// committed, opens and takes new entries after every entry it had.
// Without finishRotation raft-wal refuses every append on it ("segment
// is sealed"), so the server could never write its log again.
func TestFinishRotation(t *testing.T) {
	// Entries of 300 bytes fill the 16 KiB segment after dozens; one of
	// 20 KiB seals it alone.
	for _, size := range []int{300, 20 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			last, data := interruptRotation(t, dir, size)
			latest := map[uint64][]byte{}
			for i := uint64(1); i <= last+1; i++ {
				latest[i] = data(i)
			}
			dl, err := openDurableLog(dir, hclog.NewNullLogger(), durableLogOptions{segmentSize: 16 << 10, manualFlush: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := dl.logs.StoreLogs([]*raft.Log{{Index: last + 1, Term: 1, Type: raft.LogCommand, Data: data(last + 1)}}); err != nil {
				t.Fatalf("store %d after reopening: %v", last+1, err)
			}
			err = powerLossCheck(dl.logs, latest, 1, last+1)
			if err := errors.Join(err, closeAll(dl.closers)); err != nil {
				t.Fatal(err)
			}
			// The repaired meta store names each segment once and will
			// give the next one a fresh ID.
			meta := &metadb.BoltMetaDB{}
			state, err := meta.Load(dir)
			if err := errors.Join(err, meta.Close()); err != nil {
				t.Fatal(err)
			}
			ids := map[uint64]bool{}
			for _, sg := range state.Segments {
				if ids[sg.ID] || sg.ID >= state.NextSegmentID {
					t.Fatalf("segment IDs %+v with the next one %d", state.Segments, state.NextSegmentID)
				}
				ids[sg.ID] = true
			}
		})
	}
}

// TestFinishRotationClearsATornSeal: a sealing append whose index block was
// torn (its batch's checksum then fails, and raft-wal's recovery keeps
// only the entries before it, yet still reports the tail sealed) is
// cleared: the log opens with those entries and takes appends, rather than
// refuse to open (as it did) or serve entries through a wrong index.
func TestFinishRotationClearsATornSeal(t *testing.T) {
	dir := t.TempDir()
	last, _ := interruptRotation(t, dir, 300)
	meta := &metadb.BoltMetaDB{}
	state, err := meta.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tail := state.Segments[len(state.Segments)-1]
	w, err := segment.NewFiler(dir, fs.New()).RecoverTail(tail)
	if err != nil {
		t.Fatal(err)
	}
	_, indexStart, err := w.Sealed()
	if err := errors.Join(err, w.Close(), meta.Close()); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, segment.FileName(tail)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Any change to the index block also breaks the checksum of the batch
	// that wrote it, the sealing append, so recovery keeps only the
	// entries before that batch: up to last-1 (one entry per append). The
	// slot of last-1, the last entry the seal must read back, now points
	// at the first entry.
	var first [4]byte
	if _, err := f.ReadAt(first[:], int64(indexStart)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(first[:], int64(indexStart+4*(last-1-tail.BaseIndex))); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dl, err := openDurableLog(dir, hclog.NewNullLogger(), durableLogOptions{segmentSize: 16 << 10, manualFlush: true})
	if err != nil {
		t.Fatalf("a log whose sealing append was torn does not open: %v", err)
	}
	defer func() { _ = closeAll(dl.closers) }()
	// The torn append is gone, seal and all; the entries before it stay,
	// and the tail takes appends again (raft-wal alone would call it
	// sealed and refuse them).
	got, err := dl.logs.LastIndex()
	if err != nil || got != last-1 {
		t.Fatalf("last index %d (%v) after the torn seal was cleared, want %d", got, err, last-1)
	}
	if err := dl.logs.StoreLogs([]*raft.Log{{Index: last, Term: 1, Data: []byte("after")}}); err != nil {
		t.Fatalf("the tail refuses an append after its torn seal was cleared: %v", err)
	}
}

// TestZeroTornSealPastTheSizeLimit: a tail's last append may end past its
// size limit, and so may its torn seal; every byte from the index frame's
// header to the end of what it wrote is zeroed, and nothing before.
func TestZeroTornSealPastTheSizeLimit(t *testing.T) {
	dir := t.TempDir()
	tail := types.SegmentInfo{ID: 11, BaseIndex: 398, SizeLimit: 16 << 10}
	path := filepath.Join(dir, segment.FileName(tail))
	written := bytes.Repeat([]byte{0xab}, 20000)
	if err := os.WriteFile(path, written, 0o640); err != nil {
		t.Fatal(err)
	}
	const indexStart = 18392
	if err := zeroTornSeal(disk.OS{}, dir, tail, indexStart); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from := indexStart - walFrameHeaderLen
	if !bytes.Equal(got[:from], written[:from]) {
		t.Fatal("bytes before the torn index frame changed")
	}
	if nz := bytes.IndexFunc(got[from:], func(r rune) bool { return r != 0 }); nz >= 0 {
		t.Fatalf("byte %d, past the torn index frame, is not zero", from+nz)
	}
}
