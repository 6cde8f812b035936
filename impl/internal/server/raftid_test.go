package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/raftlog"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/model"
)

// nodeIDs are the node IDs the servers of TestRaftIDsMigrateToNodeIDs
// have once they are restarted with node IDs.
var nodeIDs = []string{
	"0b1c2d3e-0000-4000-8000-000000000001",
	"0b1c2d3e-0000-4000-8000-000000000002",
	"0b1c2d3e-0000-4000-8000-000000000003",
}

// TestRaftIDsMigrateToNodeIDs (S82): a cluster whose stored raft
// configuration names its servers by node name, as tenure did before node
// IDs, comes up on it when its servers restart with node IDs, and the
// leader's reconcile moves every entry to the node ID (the leader's own
// last) while each server takes its new ID in place; every acknowledged
// write survives, and the peers and operator views stay right.
func TestRaftIDsMigrateToNodeIDs(t *testing.T) {
	c := newTestClusterOf(t, 3, nil)
	c.waitRegistered()
	var acked []string
	for i := range 20 {
		key := fmt.Sprintf("before/%d", i)
		c.apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}})
		acked = append(acked, key)
	}
	if ids := configIDs(c.nodes[c.leader()].srv); !slices.Equal(ids, []string{"n1", "n2", "n3"}) {
		t.Fatalf("the old format names servers by node name; got %v", ids)
	}
	for i := range c.nodes {
		c.stop(i)
	}

	// The same stores, now with node IDs and gossip naming every server.
	pool := newFakeMembership().fakePool
	for i, nd := range c.nodes {
		m := reconcile.Member{Name: nd.name, ID: nodeIDs[i], Address: nd.name + ".http", Status: reconcile.Alive,
			Server: true, RaftAddr: nd.name}
		pool.set(m, false, m)
	}
	for i := range c.nodes {
		startWithNodeID(c, i, pool)
	}
	// Writes go on through the migration; each one acknowledged must stay.
	stop := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	stopWriting := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriting()
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("during/%d", n)
			for _, nd := range c.nodes {
				res, err := nd.srv.Apply(context.Background(), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}})
				if err == nil && res.Err == nil {
					mu.Lock()
					acked = append(acked, key)
					mu.Unlock()
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	c.waitFor("every server to run and be listed under its node ID", func() bool {
		for i, nd := range c.nodes {
			if nd.srv.localID() != nodeIDs[i] || !slices.Equal(configIDs(nd.srv), nodeIDs) {
				return false
			}
		}
		return true
	})
	stopWriting()
	c.apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "after", Value: []byte("v")}})
	acked = append(acked, "after")

	lead := c.nodes[c.leader()].srv
	for _, nd := range c.nodes {
		c.waitFor(nd.name+" to apply every acknowledged write", func() bool {
			missing := ""
			nd.srv.Read(func(st *model.State) {
				for _, k := range acked {
					if _, ok := st.Get(k); !ok {
						missing = k
						return
					}
				}
			})
			return missing == ""
		})
		if peers := nd.srv.Peers(); !slices.Equal(sortedCopy(peers), []string{"n1", "n2", "n3"}) {
			t.Errorf("%s: peers %v, want the three server addresses", nd.name, peers)
		}
		if nd.srv.raft.State() != raft.Leader && nd.srv.RaftLeaderAddr() == "" {
			t.Errorf("%s knows no leader", nd.name)
		}
	}
	servers, _, err := lead.RaftConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		i := slices.Index(nodeIDs, s.ID)
		if i < 0 || s.Node != c.nodes[i].name || s.Address != c.nodes[i].name || !s.Voter {
			t.Errorf("operator view of a server: %+v", s)
		}
	}
}

// startWithNodeID restarts node i on its stores with node ID nodeIDs[i]
// and a view of pool as its gossip.
func startWithNodeID(c *testCluster, i int, pool *fakePool) {
	c.t.Helper()
	nd := c.nodes[i]
	_, nd.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(nd.name), 100*time.Millisecond)
	for _, o := range c.nodes {
		if o != nd && o.srv != nil {
			nd.trans.Connect(raft.ServerAddress(o.name), o.trans)
			o.trans.Connect(raft.ServerAddress(nd.name), nd.trans)
		}
	}
	srv, err := NewServer(Config{
		NodeName: nd.name, NodeID: nodeIDs[i], HTTPAddr: nd.name + ".http", Clock: c.clock,
		Transport: nd.trans, LogStore: nd.logs, StableStore: nd.logs, SnapshotStore: nd.snaps,
		tuneRaft: fastRaft, Forward: c.router, Membership: pool.view(),
	})
	if err != nil {
		c.t.Fatalf("restart %s: %v", nd.name, err)
	}
	nd.srv = srv
	c.router.set(nd.name, srv)
}

// configIDs is s's latest raft configuration's server IDs, sorted.
func configIDs(s *Server) []string {
	fut := s.raft.GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	var out []string
	for _, srv := range fut.Configuration().Servers {
		out = append(out, string(srv.ID))
	}
	slices.Sort(out)
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestStartID: a server starts raft under the ID its stored configuration
// lists it by, its name from before node IDs included, so that it can
// stand for election at once; on empty stores under its bootstrap ID.
func TestStartID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored []raft.Server
		want   string
	}{
		{"empty stores", nil, nodeIDs[0]},
		{"listed by name", []raft.Server{{ID: "n1", Address: "n1"}, {ID: "n2", Address: "n2"}}, "n1"},
		{"listed by node ID", []raft.Server{{ID: raft.ServerID(nodeIDs[0]), Address: "n1"}, {ID: "n2", Address: "n2"}}, nodeIDs[0]},
		{"listed by neither", []raft.Server{{ID: "n2", Address: "n2"}}, nodeIDs[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
			cfg := Config{NodeName: "n1", NodeID: nodeIDs[0], Dev: true, LogStore: logs, StableStore: logs, SnapshotStore: snaps}
			cfg, err := cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Peers = nil
			rc, err := cfg.raftConfig()
			if err != nil {
				t.Fatal(err)
			}
			if tc.stored != nil {
				_, trans := raft.NewInmemTransport("n1")
				if err := raft.BootstrapCluster(rc, logs, logs, snaps, trans, raft.Configuration{Servers: tc.stored}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := startID(cfg, rc, &raftlog.Stores{Logs: logs, Stable: logs, Snaps: snaps})
			if err != nil || string(got) != tc.want {
				t.Fatalf("startID: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
