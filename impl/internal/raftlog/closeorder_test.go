package raftlog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
)

// gatedMeta holds the first meta commit after arm at a gate until release,
// and records whether any commit reached the store after it was closed.
type gatedMeta struct {
	types.MetaStore
	armed, closedFlag, commitAfterClose atomic.Bool
	entered, release, closed            chan struct{}
}

func (m *gatedMeta) CommitState(st types.PersistentState) error {
	if m.armed.CompareAndSwap(true, false) {
		close(m.entered)
		<-m.release
	}
	if m.closedFlag.Load() {
		m.commitAfterClose.Store(true)
	}
	return m.MetaStore.CommitState(st)
}

// Close may run twice: raft-wal's Close closes its meta store too.
func (m *gatedMeta) Close() error {
	if m.closedFlag.CompareAndSwap(false, true) {
		close(m.closed)
	}
	return m.MetaStore.Close()
}

// TestLogClosesWALBeforeMetaStore: a segment rotation that is committing
// its meta data when the log is closed finishes on an open meta store; the
// log's Close waits for it. Closing the meta store first (the order once
// used) lets the rotation commit to a closed store, which crashed the
// process at shutdown.
func TestLogClosesWALBeforeMetaStore(t *testing.T) {
	gate := &gatedMeta{entered: make(chan struct{}), release: make(chan struct{}), closed: make(chan struct{})}
	dl, err := openDurableLog(t.TempDir(), hclog.NewNullLogger(), durableLogOptions{
		wrapMeta: func(m types.MetaStore) types.MetaStore {
			gate.MetaStore = m
			return gate
		},
		segmentSize: 16 << 10,
		manualFlush: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	gate.armed.Store(true)
	// One entry larger than the segment fills and seals it, which starts
	// the rotation in the background.
	if err := dl.logs.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: make([]byte, 20<<10)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no rotation reached the meta store")
	}
	closed := make(chan error, 1)
	go func() { closed <- closeAll(dl.closers) }()
	// In the right order the meta store cannot close before the rotation
	// is let through, so the wait below only delays; in the wrong order it
	// closes at once, and the rotation then commits after it.
	select {
	case <-gate.closed:
	case <-time.After(200 * time.Millisecond):
	}
	close(gate.release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close did not finish")
	}
	if gate.commitAfterClose.Load() {
		t.Fatal("the rotation committed to the meta store after it was closed")
	}
}
