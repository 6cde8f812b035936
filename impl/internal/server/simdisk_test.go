package server

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simdisk"
)

// TestServerOnSimDiskSurvivesPowerLoss runs a whole durable server (raft-wal
// log, the file meta store, the snapshot store) on simdisk inside a bubble,
// as the simulator would: it elects itself, applies writes, snapshots,
// loses power, restarts on the same disk and finds every applied write.
func TestServerOnSimDiskSurvivesPowerLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := simdisk.New()
		start := func() *Server {
			_, trans := raft.NewInmemTransport("solo")
			s, err := NewServer(Config{
				NodeName: "solo", HTTPAddr: "127.0.0.1:1", DataDir: "/data", Disk: d, LogSegmentSize: 32 << 10,
				Transport: trans, Peers: []Peer{{Name: "solo", RaftAddr: "solo"}}, tuneRaft: fastRaft,
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.Registered():
			case <-time.After(10 * time.Second):
				t.Fatal("server on simdisk never registered itself")
			}
			// A restarted node sees itself registered (from its own log)
			// before it has won the election.
			for s.currentTerm() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			return s
		}
		s := start()
		mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "before-snapshot", Value: []byte("a")}})
		if err := s.raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		for i := range 100 {
			mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte{byte(i)}}})
		}
		mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "last", Value: []byte("z")}})
		var before *model.State
		s.Read(func(st *model.State) { before = st.Clone() })

		d.PowerLoss()
		// The server must stop at once: with its disk gone, raft cannot
		// persist a term and would panic at its next election.
		if err := s.Shutdown(); err != nil && !errors.Is(err, simdisk.ErrPowerOff) && !errors.Is(err, simdisk.ErrStaleHandle) {
			t.Fatalf("shutdown after the power loss: %v", err)
		}
		d.PowerOn()

		s = start()
		defer func() {
			if err := s.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		// Applied after everything before it: the replay is done.
		mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "after-restart", Value: []byte("c")}})
		s.Read(func(st *model.State) {
			n := 0
			for k, e := range before.Entries() {
				n++
				if g, ok := st.Get(k); !ok || !entryEq(g, e) {
					t.Errorf("key %s: before the power loss %+v, after %+v", k, e, g)
				}
			}
			if n < 3 {
				t.Errorf("only %d keys before the power loss", n)
			}
		})
		if u := d.Usage(); u > 4<<20 {
			t.Errorf("the disk holds %d bytes for a short run", u)
		} else {
			t.Logf("disk usage after the run: %d bytes", u)
		}
	})
}
