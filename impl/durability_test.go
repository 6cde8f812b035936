package impl

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/clock/clocktest"
	"github.com/tenurekv/tenure/model"
)

// The server's side of the deferred leader fsync (raftlog.LogSync): the
// FSM's apply gate, and a durable cluster that defers and still ends with
// every write.

// TestFSMAppliesOnlyDurableEntries: the FSM asks whether each entry is on
// this server's disk before applying it, and refuses one that is not.
func TestFSMAppliesOnlyDurableEntries(t *testing.T) {
	f := newFSM(newWireCodec(), guardEffects{newLockDelayGuard(clocktest.NewManual(time.Unix(0, 0))), nil})
	var asked []uint64
	notYet := errors.New("not on disk")
	f.awaitDurable = func(idx uint64) error {
		asked = append(asked, idx)
		if idx > 1 {
			return notYet
		}
		return nil
	}
	set := func(key string) *raft.Log {
		return commandLog(t, f.codec, uint64(len(asked)+1), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}})
	}
	f.Apply(set("durable"))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an entry that is not on disk was applied without complaint")
			}
		}()
		f.Apply(set("not-durable"))
	}()
	if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
		t.Fatalf("durability asked for %v, want [1 2]", asked)
	}
	f.read(func(st *model.State) {
		if _, ok := st.Get("durable"); !ok {
			t.Error("the durable entry was not applied")
		}
		if _, ok := st.Get("not-durable"); ok {
			t.Error("the entry that is not on disk was applied")
		}
	})
}

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
