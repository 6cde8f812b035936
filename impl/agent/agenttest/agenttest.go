// Package agenttest starts tenure agents in process for tests and
// benchmarks, on 127.0.0.1 only. Agents started with a testing.TB stop
// through tb.Cleanup; the one agent a test binary shares (shared.go) stops
// in its TestMain, through Main.
package agenttest

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-uuid"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// StartDevAgent starts a dev agent, letting mod adjust its configuration
// first, and waits until it serves session creates (S47).
func StartDevAgent(tb testing.TB, mod func(*agent.Config)) *agent.Agent {
	tb.Helper()
	cfg, err := devConfig("dev")
	if err != nil {
		tb.Fatal(err)
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := newReady(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			tb.Errorf("stop dev agent: %v", err)
		}
	})
	return a
}

// devConfig is a single in-memory node named node, HTTP, gossip and the
// server port (for client agents' requests) on free 127.0.0.1 ports, with
// Consul's dev gossip timing.
func devConfig(node string) (agent.Config, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return agent.Config{}, fmt.Errorf("server port: %w", err)
	}
	id, err := uuid.GenerateUUID()
	if err != nil {
		return agent.Config{}, errors.Join(fmt.Errorf("node ID: %w", err), ln.Close())
	}
	return agent.Config{Server: server.Config{NodeName: node, NodeID: id, HTTPAddr: "127.0.0.1:0", Dev: true, ServerListener: ln},
		// A build tag, as the tenure binary advertises one, gives the node
		// its consul-version meta (S62).
		Gossip: &gossip.Config{BindAddr: "127.0.0.1", Timing: gossip.DevTiming,
			Tags: map[string]string{gossip.TagBuild: "0.0.0-test:"}}}, nil
}

// newReady starts an agent and waits until it is ready (see awaitReady);
// on failure the agent is shut down. The caller stops it.
func newReady(cfg agent.Config) (*agent.Agent, error) {
	a, err := agent.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("start agent %s: %w", cfg.Server.NodeName, err)
	}
	if err := awaitReady(a); err != nil {
		return nil, errors.Join(err, a.Shutdown())
	}
	return a, nil
}

// ClusterOptions shape StartCluster.
type ClusterOptions struct {
	// Durable puts each server's raft log and snapshots on disk under a
	// temporary directory (the production stores); otherwise in memory.
	Durable bool
	// Adjust, if set, changes server i's configuration before it starts.
	Adjust func(i int, cfg *agent.Config)
}

// Cluster is n agents over loopback TCP.
type Cluster struct {
	Agents []*agent.Agent
}

// Leader returns the agent that currently leads, or nil.
func (c *Cluster) Leader() *agent.Agent {
	for _, a := range c.Agents {
		if isLeader, _, _ := a.Server().Leader(); isLeader {
			return a
		}
	}
	return nil
}

// Follower returns an agent other than the current leader; nil if there
// is no leader.
func (c *Cluster) Follower() *agent.Agent {
	lead := c.Leader()
	if lead == nil {
		return nil
	}
	for _, a := range c.Agents {
		if a != lead {
			return a
		}
	}
	return nil
}

// StartCluster starts n agents that know each other from the start (the
// equivalent of -bootstrap-expect n), each with raft and HTTP on free
// 127.0.0.1 ports, and waits until every one is registered and knows the
// leader.
func StartCluster(tb testing.TB, n int, opts ClusterOptions) *Cluster {
	tb.Helper()
	raftLns := make([]net.Listener, n)
	var peers []server.Peer
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("raft listener: %v", err)
		}
		raftLns[i] = ln
		peers = append(peers, server.Peer{Name: nodeName(i), RaftAddr: ln.Addr().String()})
	}
	c := &Cluster{}
	tb.Cleanup(func() {
		for _, a := range c.Agents {
			if err := a.Shutdown(); err != nil {
				tb.Errorf("stop agent: %v", err)
			}
		}
	})
	for i := range n {
		// Raft's own timeouts, as a server runs with: with 100 ms leases a
		// leader on a busy machine stepped down in the middle of a test
		// (TestBlockingReadThroughFollower answered "No cluster leader"
		// once in 50 runs beside other work). The first election takes a
		// second or two longer.
		cfg := agent.Config{Server: server.Config{
			NodeName: nodeName(i), HTTPAddr: "127.0.0.1:0", ServerListener: raftLns[i], Peers: peers,
		}}
		if opts.Durable {
			cfg.Server.DataDir = filepath.Join(tb.TempDir(), nodeName(i))
		} else {
			mem := raft.NewInmemStore()
			cfg.Server.LogStore, cfg.Server.StableStore = mem, mem
			cfg.Server.SnapshotStore = raft.NewInmemSnapshotStore()
		}
		if opts.Adjust != nil {
			opts.Adjust(i, &cfg)
		}
		a, err := agent.New(cfg)
		if err != nil {
			tb.Fatalf("start %s: %v", nodeName(i), err)
		}
		c.Agents = append(c.Agents, a)
	}
	for _, a := range c.Agents {
		if err := awaitReady(a); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

func nodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

// awaitReady waits until a has registered its own node with a passing
// serfHealth (S47) and knows the leader, so that it serves session creates
// and forwards writes.
func awaitReady(a *agent.Agent) error {
	select {
	case <-a.Server().Registered():
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s never registered itself", a.Server().NodeName())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, known := a.Server().Leader(); known {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never learned who leads", a.Server().NodeName())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// StartClient starts a client agent named node on free 127.0.0.1 ports with
// dev gossip timing, joined to the gossip pool of server (an agent started
// here with gossip); it stops through tb.Cleanup.
func StartClient(tb testing.TB, node string, server *agent.Agent) *agent.Client {
	tb.Helper()
	return StartClientWith(tb, node, server, nil)
}

// StartClientWith is StartClient letting mod adjust the configuration first.
func StartClientWith(tb testing.TB, node string, server *agent.Agent, mod func(*agent.ClientConfig)) *agent.Client {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	id, err := uuid.GenerateUUID()
	if err != nil {
		tb.Fatal(err)
	}
	// An ID and a build tag, as the tenure binary gives every agent (S62).
	cfg := agent.ClientConfig{NodeName: node, NodeID: id, Listener: ln,
		Gossip: gossip.Config{BindAddr: "127.0.0.1", Timing: gossip.DevTiming,
			Tags: map[string]string{gossip.TagBuild: "0.0.0-test:"}},
		Join: []string{server.Members().Local().Addr()}, RetryInterval: 100 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := agent.NewClient(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Shutdown(); err != nil {
			tb.Errorf("stop client agent %s: %v", node, err)
		}
	})
	return c
}
