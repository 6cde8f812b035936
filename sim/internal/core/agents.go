package core

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/model"
)

// AgentName is the node of the i-th client agent (0-based). Client names
// carry '/' and '=' (their group's label), which a host name cannot, so an
// agent gets a name of its own; RunHeader.Clients says whose it is.
func AgentName(i int) string { return fmt.Sprintf("agent%d", i+1) }

// ClientAgent is one simulated client agent: the production client agent
// (impl/agent.NewClient: serf over memberlist, Consul's HTTP API forwarding
// to servers) on its own node of the simulated network, its gossip over
// the simulated network (gossipnet.go). A client talks HTTP to it, so its
// sessions default to the agent's node and are bound to that node's
// serfHealth, as Consul's are.
type ClientAgent struct {
	Name string

	mu      sync.Mutex
	ag      *agent.Client
	crashed bool
}

// HTTPAddr is the agent's API address on the simulated network.
func (a *ClientAgent) HTTPAddr() string { return a.Name + ":" + HttpPort }

// Alive reports whether the agent runs (it has not been crashed).
func (a *ClientAgent) Alive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ag != nil
}

// agentRetryJoin is how often an agent that reached no server retries.
const agentRetryJoin = time.Second

// startAgent boots a on the simulated network and has it join the
// servers' pool (retrying until one answers).
func (c *Cluster) startAgent(a *ClientAgent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ag != nil || a.crashed {
		return fmt.Errorf("start agent %s: already started", a.Name)
	}
	t, err := newGossipTransport(c.net, c.gossip, a.Name)
	if err != nil {
		return fmt.Errorf("start agent %s gossip: %w", a.Name, err)
	}
	ln, err := c.net.Listen(a.HTTPAddr())
	if err != nil {
		return errors.Join(fmt.Errorf("start agent %s: %w", a.Name, err), t.Shutdown())
	}
	var join []string
	for _, s := range c.Servers {
		join = append(join, c.gossip.addr(s.Name))
	}
	ag, err := agent.NewClient(agent.ClientConfig{NodeName: a.Name, Listener: ln, HTTPAddr: a.HTTPAddr(),
		Gossip: agent.GossipConfig{Transport: t, Timing: c.gossipTiming(a.Name), Rand: c.gossipRand(a.Name)}, Join: join, RetryInterval: agentRetryJoin,
		Dial: c.serverDial(a.Name), Local: c.agentLocal(a.Name), ACL: c.aclConfig(false),
		Coordinates: agent.CoordinateConfig{Disable: true}})
	if err != nil {
		// NewClient closed the listener; the transport is still ours.
		return errors.Join(fmt.Errorf("start agent %s: %w", a.Name, err), t.Shutdown())
	}
	a.ag = ag
	return nil
}

// agentLocal is the agent-local configuration of the agent on node: its
// random waits (first check runs, deferred output syncs, anti-entropy
// periods) come from the seed, so that nothing random enters a run from
// outside its seed: one stream for the local state and check runner, one
// for the anti-entropy loop, which draws on a goroutine of its own (with
// one stream, which of them drew first at an instant decided both waits).
// Every interval keeps Consul's default (Bounds.AgentCheck rests on them).
func (c *Cluster) agentLocal(node string) agent.LocalConfig {
	lc := agent.LocalConfig{Stagger: staggerFrom(Stream(c.seed, "agent-local/"+node))}
	lc.Sync.Stagger = staggerFrom(Stream(c.seed, "agent-sync/"+node))
	return lc
}

// staggerFrom draws waits in [0, d) from r, under a lock.
func staggerFrom(r *rand.Rand) func(time.Duration) time.Duration {
	var mu sync.Mutex
	return func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(d)))
	}
}

// CrashAgent stops a as kill -9 would: no leave, so the pool sees it fail.
// A crashed agent stays down.
func (c *Cluster) CrashAgent(a *ClientAgent) error {
	a.mu.Lock()
	ag := a.ag
	a.ag, a.crashed = nil, true
	a.mu.Unlock()
	if ag == nil {
		return nil
	}
	if err := ag.Kill(); err != nil {
		return fmt.Errorf("crash agent %s: %w", a.Name, err)
	}
	return nil
}

// Agent returns the client agent named name, or nil.
func (c *Cluster) Agent(name string) *ClientAgent {
	for _, a := range c.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AgentNames lists the client agents' nodes.
func (c *Cluster) AgentNames() []string {
	var out []string
	for _, a := range c.Agents {
		out = append(out, a.Name)
	}
	return out
}

// waitAgentsPassing waits until the leader has registered each client
// agent's node with serfHealth passing (the reconcile of its gossip join),
// one after the other, as a client agent holds its first session create
// until it sees its own.
func (c *Cluster) waitAgentsPassing(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, a := range c.Agents {
		for !c.passing(a.Name) {
			if time.Now().After(deadline) {
				return fmt.Errorf("sim: %s not registered passing within %v", a.Name, limit)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// passing reports whether the current leader has node's serfHealth passing.
func (c *Cluster) passing(node string) bool {
	ok := false
	c.readLeader(func(st *model.State) {
		ch, found := st.Check(model.CheckKey{Node: node, CheckID: model.SerfHealthCheckID})
		ok = found && ch.Status == model.HealthPassing
	})
	return ok
}

// readLeader runs fn on the current leader's state, if there is a leader.
func (c *Cluster) readLeader(fn func(*model.State)) {
	l := c.Leader()
	if l == nil {
		return
	}
	if srv := l.Current(); srv != nil {
		srv.Read(fn)
	}
}

// AgentRecordsWritten reports whether the current leader's state holds the
// node record (meta with agent.MetaSegment) of every client agent still
// running.
func (c *Cluster) AgentRecordsWritten() bool {
	read, ok := false, true
	c.readLeader(func(st *model.State) {
		read = true
		for _, a := range c.Agents {
			if !a.Alive() {
				continue
			}
			n, found := st.Node(a.Name)
			if _, has := n.Meta[agent.MetaSegment]; !found || !has {
				ok = false
				return
			}
		}
	})
	return read && ok
}
