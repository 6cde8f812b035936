package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// TestServerPortReplicatesWithoutPipelining pins the measured tuning in
// openServerPort: raft falls back to one AppendEntries in flight per
// follower only when the transport refuses a pipeline.
func TestServerPortReplicatesWithoutPipelining(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logger := hclog.NewNullLogger()
	trans, demux, err := openServerPort(ln, rpc.NewServer(logger), rpc.DialTCP, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := errors.Join(trans.Close(), demux.Close()); err != nil {
			t.Error(err)
		}
	}()
	p, err := trans.AppendEntriesPipeline("peer", raft.ServerAddress(ln.Addr().String()))
	if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		if p != nil {
			_ = p.Close()
		}
		t.Fatalf("AppendEntriesPipeline = %v, want %v", err, raft.ErrPipelineReplicationNotSupported)
	}
}

// refusingLogStore fails a follower's log writes on demand, slowly, as a
// stalled disk behind a timeout would. The write is refused, never made,
// so the follower's log stays whole and it can catch up once cleared.
type refusingLogStore struct {
	raft.LogStore
	refusing atomic.Bool
}

func (s *refusingLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *refusingLogStore) StoreLogs(logs []*raft.Log) error {
	if s.refusing.Load() {
		time.Sleep(200 * time.Millisecond)
		return errors.New("log store refused the write")
	}
	return s.LogStore.StoreLogs(logs)
}

// TestFollowerCatchesUpAfterRefusedWrites: a follower whose log store
// refused writes for a while must be replicated to again once it accepts
// them. With raft's pipelined replication (MaxRPCsInFlight 2 or more) this
// fails: a refusal ends the pipeline's decoder while its sender can still
// queue one more request, and the two goroutines then wait on each other
// for ever, with heartbeats still flowing (hashicorp/raft#612, DESIGN.md
// "Known bugs in our raft dependencies").
func TestFollowerCatchesUpAfterRefusedWrites(t *testing.T) {
	const n = 3
	lns, peers := serverPorts(t, n)
	servers := make([]*Server, n)
	logs := make([]*refusingLogStore, n)
	ctx, stop := context.WithCancel(context.Background())
	var writers sync.WaitGroup
	defer func() {
		for _, l := range logs {
			if l != nil {
				l.refusing.Store(false)
			}
		}
		stop()
		writers.Wait()
		// A leader whose replication wedged cannot shut down (raft waits
		// for the wedged goroutines); that failure is reported above, so
		// its goroutines are left behind rather than hanging the test.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, s := range servers {
				if s == nil {
					continue
				}
				if err := s.Shutdown(); err != nil {
					t.Error(err)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the servers did not shut down within 20 s")
		}
	}()
	for i := range servers {
		logs[i] = &refusingLogStore{LogStore: raft.NewInmemStore()}
		s, err := NewServer(Config{
			NodeName: peers[i].Name, HTTPAddr: "127.0.0.1:1",
			Clock:          clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			ServerListener: lns[i], Peers: peers,
			LogStore: logs[i], StableStore: raft.NewInmemStore(), SnapshotStore: raft.NewInmemSnapshotStore(),
			tuneRaft: func(c *raft.Config) {
				c.HeartbeatTimeout = time.Second
				c.ElectionTimeout = time.Second
				c.LeaderLeaseTimeout = 500 * time.Millisecond
				c.CommitTimeout = 5 * time.Millisecond
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
	}
	leader := awaitLeader(t, servers)
	follower := (leader + 1) % n
	// Steady concurrent writes keep the leader replicating, so that a
	// pipelined transport would be in pipeline mode when the refusals come.
	for w := range 8 {
		writers.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				cmd := model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: fmt.Sprintf("w%d", w), Value: fmt.Appendf(nil, "%d", i)}}
				_, _ = servers[leader].Apply(ctx, cmd)
				time.Sleep(time.Millisecond)
			}
		})
	}
	caughtUp := func() bool {
		want := servers[leader].raft.CommitIndex()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if servers[follower].raft.AppliedIndex() >= want {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); servers[leader].raft.CommitIndex() < 500; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d entries committed in 10 s of writes", servers[leader].raft.CommitIndex())
		}
	}
	if !caughtUp() {
		t.Fatal("the follower never caught up before any refusal")
	}
	for round := 1; round <= 4; round++ {
		if servers[leader].raft.State() != raft.Leader {
			t.Fatalf("round %d: s%d lost leadership; the test needs one leader throughout", round, leader)
		}
		logs[follower].refusing.Store(true)
		time.Sleep(time.Second)
		logs[follower].refusing.Store(false)
		if !caughtUp() {
			t.Fatalf("round %d: the leader stopped replicating to the follower after its refusals (applied %d, leader's commit %d)",
				round, servers[follower].raft.AppliedIndex(), servers[leader].raft.CommitIndex())
		}
	}
}

// serverPorts opens n server ports on loopback and names a peer on each,
// for clusters of servers on real ports.
func serverPorts(t *testing.T, n int) ([]net.Listener, []Peer) {
	t.Helper()
	lns := make([]net.Listener, n)
	peers := make([]Peer, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, open := range lns[:i] {
				_ = open.Close()
			}
			t.Fatal(err)
		}
		lns[i] = ln
		peers[i] = Peer{Name: fmt.Sprintf("s%d", i), RaftAddr: ln.Addr().String()}
	}
	return lns, peers
}

// awaitLeader waits up to 10 s for one of servers to lead and returns it.
func awaitLeader(t *testing.T, servers []*Server) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for i, s := range servers {
			if s.raft.State() == raft.Leader {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
	}
}

// addrString is a net.Addr of any network, as the simulator's listeners
// report theirs.
type addrString string

func (addrString) Network() string  { return "sim" }
func (a addrString) String() string { return string(a) }

// TestServerPortNeedsAnAdvertisableAddress: peers dial the port at the
// listener's address, so an unspecified IP or a missing host or port is
// refused, while an IP or a host name (the simulator's nodes) is taken.
func TestServerPortNeedsAnAdvertisableAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8300": true, "10.0.0.1:8300": true, "n1:8300": true, "[::1]:8300": true,
		"0.0.0.0:8300": false, "[::]:8300": false, ":8300": false, "n1": false, "n1:": false,
	} {
		if got := advertisable(addrString(addr)); got != want {
			t.Errorf("advertisable(%q) = %v, want %v", addr, got, want)
		}
	}
}
