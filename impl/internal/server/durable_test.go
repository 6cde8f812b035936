package server

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/model"
)

// TestDurableRestart writes through a single durable server (raft-wal log,
// file snapshots), snapshots half-way, restarts it on the same directory and
// finds every acknowledged write and session again: the snapshot restores the
// first half, the log replays the second.
func TestDurableRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server {
		_, trans := raft.NewInmemTransport("solo")
		s, err := NewServer(Config{
			NodeName: "solo", HTTPAddr: "127.0.0.1:1", Clock: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), DataDir: dir,
			Transport: trans, Peers: []Peer{{Name: "solo", RaftAddr: "solo"}}, tuneRaft: fastRaft,
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.Registered():
		case <-time.After(10 * time.Second):
			t.Fatal("durable server never registered itself")
		}
		// A restarted node sees itself registered (from its own log) before
		// it has won the election.
		deadline := time.Now().Add(10 * time.Second)
		for s.currentTerm() == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return s
	}
	s := start()
	sid := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "solo", TTL: "30s"}}).SessionID
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "lock", Value: []byte("a"), Session: sid}})
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "after-snapshot", Value: []byte("b")}})
	var before *model.State
	s.Read(func(st *model.State) { before = st.Clone() })
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = start()
	// A second server on the same directory is refused at once.
	if other, err := NewServer(Config{NodeName: "solo", Clock: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), DataDir: dir, RaftAddr: "127.0.0.1:0"}); err == nil {
		_ = other.Shutdown()
		t.Fatal("a second server opened a data directory in use")
	} else if !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second server on the directory: %v", err)
	}
	defer func() {
		if err := s.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	// Wait until the log tail is replayed: the restarted leader commits its
	// own entries only after everything before them.
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "after-restart", Value: []byte("c")}})
	s.Read(func(st *model.State) {
		for k, e := range before.Entries() {
			if g, ok := st.Get(k); !ok || !entryEq(g, e) {
				t.Errorf("key %s: before %+v, after restart %+v", k, e, g)
			}
		}
		if se, ok := st.Session(sid); !ok || se.TTL != "30s" {
			t.Errorf("session lost in restart: %+v", se)
		}
	})
	if _, ok := s.leader.TTLDeadline(sid); !ok {
		t.Error("restarted leader did not arm the restored TTL session")
	}
}

func entryEq(a, b model.KVEntry) bool {
	return a.Key == b.Key && string(a.Value) == string(b.Value) && a.Flags == b.Flags &&
		a.LockIndex == b.LockIndex && a.Session == b.Session &&
		a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}
