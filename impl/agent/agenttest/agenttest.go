// Package agenttest starts tenure agents in process for tests and
// benchmarks, on 127.0.0.1 only, and stops them through tb.Cleanup.
package agenttest

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl"
	"github.com/tenurekv/tenure/impl/agent"
)

// StartDev starts a dev agent (single in-memory node) on 127.0.0.1 with a
// free port and returns its base URL, http://127.0.0.1:port. Its signature
// matches conformance.StartDev.
func StartDev(tb testing.TB) string {
	tb.Helper()
	return "http://" + StartDevAgent(tb, nil).HTTPAddr()
}

// StartDevAgent starts a dev agent, letting mod adjust its configuration
// first, and waits until it serves session creates (S47).
func StartDevAgent(tb testing.TB, mod func(*agent.Config)) *agent.Agent {
	tb.Helper()
	cfg := agent.Config{Server: impl.Config{NodeName: "dev", HTTPAddr: "127.0.0.1:0", Dev: true}}
	if mod != nil {
		mod(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		tb.Fatalf("start dev agent: %v", err)
	}
	tb.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			tb.Errorf("stop dev agent: %v", err)
		}
	})
	waitRegistered(tb, a)
	return a
}

// ClusterOptions shape StartCluster.
type ClusterOptions struct {
	// Durable puts each server's raft log and snapshots on disk under a
	// temporary directory (the production stores); otherwise in memory.
	Durable bool
	// Mod, if set, adjusts each agent's configuration before it starts.
	Mod func(i int, cfg *agent.Config)
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

// StartCluster starts n agents that know each other from the start (the
// equivalent of -bootstrap-expect n), each with raft and HTTP on free
// 127.0.0.1 ports, and waits until every one is registered and knows the
// leader's HTTP address.
func StartCluster(tb testing.TB, n int, opts ClusterOptions) *Cluster {
	tb.Helper()
	raftLns := make([]net.Listener, n)
	var peers []impl.Peer
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("raft listener: %v", err)
		}
		raftLns[i] = ln
		peers = append(peers, impl.Peer{Name: nodeName(i), RaftAddr: ln.Addr().String()})
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
		trans, err := impl.NewTCPTransport(raftLns[i], nil)
		if err != nil {
			tb.Fatal(err)
		}
		cfg := agent.Config{Server: impl.Config{
			NodeName: nodeName(i), HTTPAddr: "127.0.0.1:0", Transport: trans, Peers: peers,
			Raft: func(rc *raft.Config) {
				// Loopback needs no second-long timeouts; elections in a
				// test should take a fraction of a second.
				rc.HeartbeatTimeout = 200 * time.Millisecond
				rc.ElectionTimeout = 200 * time.Millisecond
				rc.LeaderLeaseTimeout = 100 * time.Millisecond
			},
		}}
		if opts.Durable {
			cfg.Server.DataDir = filepath.Join(tb.TempDir(), nodeName(i))
		} else {
			mem := raft.NewInmemStore()
			cfg.Server.LogStore, cfg.Server.StableStore = mem, mem
			cfg.Server.SnapshotStore = raft.NewInmemSnapshotStore()
		}
		if opts.Mod != nil {
			opts.Mod(i, &cfg)
		}
		a, err := agent.New(cfg)
		if err != nil {
			_ = trans.Close()
			tb.Fatalf("start %s: %v", nodeName(i), err)
		}
		c.Agents = append(c.Agents, a)
	}
	for _, a := range c.Agents {
		waitRegistered(tb, a)
	}
	return c
}

func nodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

func waitRegistered(tb testing.TB, a *agent.Agent) {
	tb.Helper()
	select {
	case <-a.Server().Registered():
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s never registered itself", a.Server().NodeName())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, known := a.Server().Leader(); known {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s never learned the leader's HTTP address", a.Server().NodeName())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
