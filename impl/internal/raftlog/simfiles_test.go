package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/sim/simdisk"
)

func metaState(n uint64) types.PersistentState {
	st := types.PersistentState{NextSegmentID: n + 1}
	for i := uint64(1); i <= n; i++ {
		st.Segments = append(st.Segments, types.SegmentInfo{ID: i, BaseIndex: i * 100, MinIndex: i * 100, SizeLimit: 1 << 20})
	}
	return st
}

// metaCommitAtomic commits state a, then state b while the power goes at
// cut (each fsync takes 10 ms), and reads the store back: it must hold a
// or b, and b if b's commit had returned.
func metaCommitAtomic(open func(disk.FS) types.MetaStore, cut time.Duration, rng *rand.Rand) error {
	d := simdisk.New()
	if e := d.MkdirAll("/m", 0o750); e != nil {
		return e
	}
	m := open(d)
	if _, e := m.Load("/m"); e != nil {
		return e
	}
	a, b := metaState(2), metaState(3)
	if e := m.CommitState(a); e != nil {
		return e
	}
	if e := m.SetStable([]byte("k"), []byte("a")); e != nil {
		return e
	}
	d.SetSyncDelay(10 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- m.CommitState(b) }()
	time.Sleep(cut)
	var returned bool
	select {
	case e := <-done:
		returned = e == nil
	default:
	}
	if rng != nil {
		d.PowerLossRand(rng)
	} else {
		d.PowerLoss()
	}
	if !returned {
		<-done
	}
	d.PowerOn()
	d.SetSyncDelay(0)
	m2 := open(d)
	got, err := m2.Load("/m")
	if err != nil {
		return fmt.Errorf("load after the power loss at %v: %w", cut, err)
	}
	v, err := m2.GetStable([]byte("k"))
	if err != nil || string(v) != "a" {
		return fmt.Errorf("stable key after the power loss: %q, %v", v, err)
	}
	switch {
	case reflect.DeepEqual(got, b):
	case returned:
		return fmt.Errorf("power lost at %v after the commit returned: state %+v, want the new one", cut, got)
	case !reflect.DeepEqual(got, a):
		return fmt.Errorf("power lost at %v: state %+v is neither the old nor the new one", cut, got)
	}
	return nil
}

func newFileMetaOn(d disk.FS) types.MetaStore { return &fileMeta{fs: d, lock: make(chan struct{}, 1)} }

// TestFileMetaCommitIsAtomic cuts the power at every point of a commit
// (before, between and after its two fsyncs), losing all unsynced state
// or a seeded part of it.
func TestFileMetaCommitIsAtomic(t *testing.T) {
	for _, cut := range []time.Duration{0, 5, 15, 25} {
		for seed := range uint64(10) {
			var rng *rand.Rand
			if seed > 0 {
				rng = rand.New(rand.NewPCG(seed, 4))
			}
			synctest.Test(t, func(t *testing.T) {
				if err := metaCommitAtomic(newFileMetaOn, cut*time.Millisecond, rng); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// inPlaceMeta is the check's known-bad input: a meta store that rewrites
// its file in place and never fsyncs.
type inPlaceMeta struct {
	fileMeta
}

func (m *inPlaceMeta) CommitState(st types.PersistentState) error {
	m.state = st
	f, err := m.fs.OpenFile(filepath.Join(m.dir, metaFileName), os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o640)
	if err != nil {
		return err
	}
	defer f.Close()
	body := []byte("{}")
	_, err = f.WriteAt(append([]byte{0, 0, 0, 0}, body...), 0)
	return err
}

func TestFileMetaCheckCatchesAnUnsyncedCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		err := metaCommitAtomic(func(d disk.FS) types.MetaStore {
			return &inPlaceMeta{fileMeta{fs: d, lock: make(chan struct{}, 1)}}
		}, 25*time.Millisecond, nil)
		if err == nil {
			t.Fatal("an in-place, unsynced commit passed the atomicity check")
		}
		t.Logf("reported: %v", err)
	})
}

func writeSnap(t *testing.T, s *snapshotStore, index uint64, data []byte, close bool) raft.SnapshotSink {
	t.Helper()
	sink, err := s.Create(raft.SnapshotVersionMax, index, 1, raft.Configuration{Servers: []raft.Server{{ID: "a", Address: "a"}}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(data); err != nil {
		t.Fatal(err)
	}
	if close {
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return sink
}

func listed(t *testing.T, s *snapshotStore) []uint64 {
	t.Helper()
	metas, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var idx []uint64
	for _, m := range metas {
		idx = append(idx, m.Index)
	}
	return idx
}

// TestSnapshotStoreOnSimDisk: a snapshot is listed only once closed, a
// closed one survives a power loss and one being written does not, the
// newest two are kept, and data that does not match its checksum fails
// its read.
func TestSnapshotStoreOnSimDisk(t *testing.T) {
	d := simdisk.New()
	s, err := newSnapshotStore(d, "/data", 2)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("state "), 50000)
	writeSnap(t, s, 10, data, true)
	open := writeSnap(t, s, 20, []byte("partial"), false)
	if got := fmt.Sprint(listed(t, s)); got != "[10]" {
		t.Fatalf("with one snapshot closed and one open: %s", got)
	}
	_ = open // left open: the power goes while it is written
	d.PowerLoss()
	d.PowerOn()
	s, err = newSnapshotStore(d, "/data", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(listed(t, s)); got != "[10]" {
		t.Fatalf("after a power loss: %s", got)
	}
	if names, _ := d.ListDir("/data/snapshots"); len(names) != 1 {
		t.Fatalf("the unfinished snapshot was not removed: %v", names)
	}
	metas, _ := s.List()
	meta, rc, err := s.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, data) || meta.Size != int64(len(data)) || len(meta.Configuration.Servers) != 1 {
		t.Fatalf("read back %d bytes (%v), meta %+v", len(got), err, meta)
	}
	rc.Close()
	writeSnap(t, s, 30, []byte("thirty"), true)
	writeSnap(t, s, 40, []byte("forty"), true)
	if got := fmt.Sprint(listed(t, s)); got != "[40 30]" {
		t.Fatalf("after four snapshots: %s", got)
	}
	if names, _ := d.ListDir("/data/snapshots"); len(names) != 2 {
		t.Fatalf("old snapshots not reaped: %v", names)
	}
	// A flipped byte of data is caught at the end of the read.
	metas, _ = s.List()
	f, err := d.OpenFile(filepath.Join("/data/snapshots", metas[0].ID+snapSuffix), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("F"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, rc, err = s.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, errSnapCorrupt) {
		t.Fatalf("reading corrupted data: %v", err)
	}
	rc.Close()
	if _, _, err := s.Open("../../etc"); err == nil {
		t.Fatal("an id with a path in it was opened")
	}
}
