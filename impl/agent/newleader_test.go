package agent_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// noPeriodicSync leaves an agent's full syncs to its start and to the
// notices of a new leader (or a joining server): the period and the retry
// are an hour, and the stagger nothing.
func noPeriodicSync(cfg *local.Config) {
	cfg.Sync.Interval, cfg.Sync.RetryInterval = time.Hour, time.Hour
	cfg.Sync.Stagger = func(time.Duration) time.Duration { return 0 }
}

// gossipCluster starts three server agents with gossip, raft in memory,
// joined to the first one's pool.
func gossipCluster(t *testing.T) []*agent.Agent {
	t.Helper()
	var peers []server.Peer
	var lns []net.Listener
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		peers = append(peers, server.Peer{Name: fmt.Sprintf("s%d", i+1), RaftAddr: ln.Addr().String()})
	}
	var out []*agent.Agent
	for i := range 3 {
		mem := raft.NewInmemStore()
		cfg := agent.Config{
			Server: server.Config{NodeName: peers[i].Name, HTTPAddr: "127.0.0.1:0", ServerListener: lns[i], Peers: peers,
				LogStore: mem, StableStore: mem, SnapshotStore: raft.NewInmemSnapshotStore()},
			Gossip: &gossip.Config{BindAddr: "127.0.0.1", Timing: gossip.DevTiming},
		}
		noPeriodicSync(&cfg.Local)
		if i > 0 {
			cfg.Join, cfg.RetryInterval = []string{out[0].Members().Local().Addr()}, 100*time.Millisecond
		}
		a, err := agent.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		out = append(out, a)
	}
	return out
}

func leaderOf(agents []*agent.Agent) *agent.Agent {
	for _, a := range agents {
		if is, _, _ := a.Server().Leader(); is {
			return a
		}
	}
	return nil
}

// TestNewLeaderTriggersFullSync: when a new leader takes office every
// agent runs a full anti-entropy sync, as Consul's agents do on its
// gossip announcement, so entries written behind an agent's back onto its
// node are removed then rather than at the next periodic full sync (an
// hour away here).
func TestNewLeaderTriggersFullSync(t *testing.T) {
	servers := gossipCluster(t)
	cl := agenttest.StartClientWith(t, "c1", servers[0], func(cfg *agent.ClientConfig) { noPeriodicSync(&cfg.Local) })
	var old *agent.Agent
	eventually(t, "a leader, and every agent registered", func() error {
		if old = leaderOf(servers); old == nil {
			return errorf("no leader")
		}
		nodes, _, err := client(t, old.HTTPAddr()).Catalog().Nodes(nil)
		if err != nil || len(nodes) != 4 {
			return errorf("%d nodes, %v", len(nodes), err)
		}
		if n := len(cl.Members().List()); n != 4 {
			return errorf("the client knows %d members", n)
		}
		return nil
	})
	var follower *agent.Agent
	for _, s := range servers {
		if s != old {
			follower = s
			break
		}
	}
	// Drift: a service on the client's node and one on a follower's,
	// neither agent's own.
	cat := client(t, old.HTTPAddr()).Catalog()
	for _, node := range []string{"c1", follower.Server().NodeName()} {
		if _, err := cat.Register(&api.CatalogRegistration{Node: node, Address: "127.0.0.1",
			Service: &api.AgentService{ID: "drift", Service: "drift"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}
	var rest []*agent.Agent
	for _, s := range servers {
		if s != old {
			rest = append(rest, s)
		}
	}
	eventually(t, "a new leader, and both agents' drift removed by a full sync", func() error {
		lead := leaderOf(rest)
		if lead == nil {
			return errorf("no new leader yet")
		}
		c := client(t, lead.HTTPAddr()).Catalog()
		for _, node := range []string{"c1", follower.Server().NodeName()} {
			n, _, err := c.Node(node, nil)
			if err != nil || n == nil {
				return errorf("node %s: %v", node, err)
			}
			if _, ok := n.Services["drift"]; ok {
				return errorf("node %s still has the drift service", node)
			}
		}
		return nil
	})
}
