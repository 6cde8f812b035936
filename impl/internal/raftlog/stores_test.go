package raftlog

import (
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// openWAL opens the durable log the way openStores does (meta store owned by
// the caller) and returns a close function for both.
func openWAL(t *testing.T, dir string) (*wal.WAL, func()) {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta))
	if err != nil {
		t.Fatalf("open wal: %v", err)
	}
	return w, func() {
		if err := w.Close(); err != nil {
			t.Fatalf("close wal: %v", err)
		}
		if err := meta.Close(); err != nil {
			t.Fatalf("close meta: %v", err)
		}
	}
}

func storeRange(t *testing.T, w *wal.WAL, from, to uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte("entry")})
	}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatalf("store logs %d..%d: %v", from, to, err)
	}
}

// TestWALReopensAfterTailTruncation is raft's "clearing log suffix" path: a
// follower that loses an election deletes its uncommitted tail. raft-wal
// v0.4.0 sealed the segment in its metadata without writing an index block,
// so every later open failed with "sealed segment has no index block" and the
// node crash-looped (hashicorp/raft-wal#31, fixed in v0.4.1). This fails on
// v0.4.0 and passes on the version go.mod pins.
func TestWALReopensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	w, closeWAL := openWAL(t, dir)
	storeRange(t, w, 1, 100)
	if err := w.DeleteRange(90, 100); err != nil {
		t.Fatalf("truncate tail: %v", err)
	}
	closeWAL()

	w, closeWAL = openWAL(t, dir)
	storeRange(t, w, 90, 120)
	closeWAL()

	w, closeWAL = openWAL(t, dir)
	defer closeWAL()
	last, err := w.LastIndex()
	if err != nil || last != 120 {
		t.Fatalf("last index after reopen = %d, %v; want 120", last, err)
	}
	for _, i := range []uint64{1, 89, 90, 120} {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("get log %d after reopen: %v", i, err)
		}
	}
}
