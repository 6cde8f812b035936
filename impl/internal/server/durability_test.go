package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/model"
)

// The server's side of the deferred leader fsync (raftlog.LogSync): a
// durable cluster that defers and still ends with every write. The FSM's
// apply gate is tested in package fsm.

// TestDurableClusterDefersLeaderFsync runs three durable servers on real
// server ports: the leader defers its fsyncs, the transport clamps, and
// every server still ends with every write.
func TestDurableClusterDefersLeaderFsync(t *testing.T) {
	const n = 3
	lns, peers := serverPorts(t, n)
	servers := make([]*Server, n)
	for i := range servers {
		s, err := NewServer(Config{
			NodeName: peers[i].Name, HTTPAddr: "127.0.0.1:1", DataDir: t.TempDir(),
			Clock: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), ServerListener: lns[i],
			Peers: peers, tuneRaft: fastRaft,
		})
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
		defer func() {
			if err := s.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		if s.stores.Sync == nil {
			t.Fatalf("server %d has no deferred-fsync log", i)
		}
	}
	leader := servers[awaitLeader(t, servers)]
	const writes = 20
	for i := range writes {
		mustApply(t, leader, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: fmt.Sprintf("k%02d", i), Value: []byte("v")}})
	}
	if leader.stores.Sync.Deferrals() == 0 {
		t.Error("the leader synced every write in place")
	}
	last := fmt.Sprintf("k%02d", writes-1)
	for i, s := range servers {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var ok bool
			s.Read(func(st *model.State) { _, ok = st.Get(last) })
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d never applied the last write", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
