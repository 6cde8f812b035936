package core

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simclock"
	"github.com/tenurekv/tenure/sim/simdisk"
	"github.com/tenurekv/tenure/sim/simnet"
)

// httpPort is every server's HTTP port on the simulated network.
const HttpPort = "8500"

// server is one simulated server across its incarnations: its disk
// survives a crash (and, what it had synced, a power loss); everything
// else is rebuilt.
type server struct {
	Name  string
	clock *simclock.Clock // the node's true (skewed) clock
	gate  *pauseClock     // what the server is given
	disk  *simdisk.Disk

	mu sync.Mutex
	// ag is the running incarnation, built by impl/agent.New as the
	// binary's is; nil while crashed.
	ag          *agent.Agent
	incarnation int
	// stopped is set when the running incarnation is crashed, so that
	// whatever it applies while shutting down is not recorded.
	stopped *atomic.Bool
	ids     int
}

func (s *server) httpAddr() string { return s.Name + ":" + HttpPort }

// raftAddr is the server port, where raft and forwarded requests arrive.
func (s *server) raftAddr() string { return serverPortAddr(s.Name) }

// current returns the running server, nil while crashed.
func (s *server) Current() *agent.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ag == nil {
		return nil
	}
	return s.ag.Server()
}

// Components lists the parts the running incarnation was built with
// (agent.Agent.Components), nil while crashed.
func (s *server) Components() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ag == nil {
		return nil
	}
	return s.ag.Components()
}

// cluster runs the servers inside the bubble.
type Cluster struct {
	net     *simnet.Network
	rec     *Recorder
	Servers []*server
	peers   []agent.Peer
	variant *Variant
	// gossip names the servers' LAN gossip addresses: they run serf over
	// memberlist on the simulated network, and the leader takes
	// registrations and serfHealth from it, as in production. Nil: no
	// gossip, each server registers itself and nothing detects failures.
	gossip *gossipNames
	// Agents are the client agents (agents.go), one per simulated client,
	// members of the servers' gossip pool. Only with gossip.
	Agents []*ClientAgent
	// applied is the highest index any server has applied, so a restarted
	// server's replay of older entries is marked as such.
	appliedMu sync.Mutex
	applied   uint64
	// seed draws the client agents' anti-entropy and check staggers.
	seed uint64
	// acl is the run's ACL setup, nil with ACLs off.
	acl *ACLSetup
}

// simTransport is an HTTP transport whose connections travel on the
// simulated network from node from. Keep-alives are off, so every request
// dials afresh: a pooled connection would make which request uses which
// connection depend on goroutine scheduling.
func SimTransport(n *simnet.Network, from string) *http.Transport {
	return &http.Transport{DialContext: n.Dialer(from), DisableKeepAlives: true}
}

// NewCluster boots the servers names (and, with gossip, the client agents
// agents, once the servers run).
func NewCluster(n *simnet.Network, rec *Recorder, seed uint64, names []string, clocks map[string]ClockSkew, v *Variant, withGossip bool, agents []string, acl *ACLSetup) (*Cluster, error) {
	c := &Cluster{net: n, rec: rec, variant: v, seed: seed, acl: acl}
	if withGossip {
		c.gossip = newGossipNames(append(slices.Clone(names), agents...))
		for _, a := range agents {
			c.Agents = append(c.Agents, &ClientAgent{Name: a})
		}
	} else if len(agents) > 0 {
		return nil, fmt.Errorf("sim: client agents %v need gossip", agents)
	}
	for _, name := range names {
		c.peers = append(c.peers, agent.Peer{Name: name, RaftAddr: serverPortAddr(name)})
	}
	for _, name := range names {
		sk := clocks[name]
		clk, err := simclock.New(sk.Offset, sk.Rate)
		if err != nil {
			return nil, fmt.Errorf("clock of %s: %w", name, err)
		}
		s := &server{Name: name, clock: clk, gate: &pauseClock{inner: clk}, disk: simdisk.New()}
		if v != nil && v.Clock != nil {
			s.gate.now = v.Clock(clk)
		}
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if err := c.Start(s); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	for _, a := range c.Agents {
		if err := c.startAgent(a); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

// start boots s on its stores: an agent built by impl/agent.New, as the
// binary builds one, on the simulated network, clocks and stores, with a
// leader observer and the recorder's apply hook.
func (c *Cluster) Start(s *server) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ag != nil {
		return fmt.Errorf("start %s: already running", s.Name)
	}
	name, inc := s.Name, s.incarnation
	c.appliedMu.Lock()
	replayUntil := c.applied
	c.appliedMu.Unlock()
	if inc == 0 {
		replayUntil = 0
	}
	var stopped atomic.Bool
	// leadTerm is the term this server leads in, 0 while it does not lead:
	// one value, so an apply never sees a leader without its term.
	var leadTerm atomic.Uint64
	srvCfg := agent.ServerConfig{
		NodeName: name, HTTPAddr: s.httpAddr(), RaftAddr: s.raftAddr(), Clock: s.gate, Peers: c.peers,
		DataDir: dataDir, Disk: c.serverDisk(s), LogSegmentSize: logSegmentSize,
		// A failed fsync stops the process (the panic fsm makes without
		// this hook): the node crashes, as that incarnation.
		// The crash runs on a goroutine of its own (the agent's shutdown
		// waits for this one), at the end of the instant: what the
		// server's other goroutines send at the instant of the failed
		// fsync leaves, all of it, not as much as the scheduler let them
		// send before the crash took the node off the network (TestDiverge,
		// seed 5 on 5 servers: a leader's append reached one follower or
		// another).
		Fatal: func(err error) {
			c.rec.Add(Event{Kind: KindNote, Node: name, Msg: NoteStopsPrefix + err.Error()})
			go func() {
				c.net.Settle()
				c.crashIncarnation(s, inc)
			}()
		},
		Dial: c.serverDial(name), RaftRand: c.raftRand(name, inc),
		// Session IDs must not depend on crypto/rand, or no run replays.
		// Counter first: failure reports show IDs cut to 8 characters.
		NewID: func() string {
			s.ids++
			return fmt.Sprintf("%d.%s.%d", s.ids, name, inc)
		},
		// Runs on the applying goroutine, before virtual time moves on:
		// each observation carries the exact instant of its entry.
		Observe: func(ch agent.Change) {
			if stopped.Load() {
				return // a crashed incarnation
			}
			// What this entry woke (blocking queries, the registration
			// loop) runs before the next entry or batch applies: a reader
			// woken by one batch read it, or the next one too, as the
			// scheduler chose (TestDiverge, seed 5 on 5 servers: a
			// restarted server saw itself registered, or not until the
			// next append, and its first anti-entropy sync moved). It
			// relies on no goroutine holding a sync.Mutex while it waits
			// for an apply: one parked on that Mutex would keep the Wait
			// from returning (the code holds none across a wait, for
			// synctest's clock's sake).
			defer c.net.Settle()
			if ch.After.Index() == ch.Before.Index() {
				return // an entry that changed nothing
			}
			obs := observe(ch)
			obs.LeaderTerm, obs.Clock, obs.Incarnation = leadTerm.Load(), s.clock.Now(), inc
			obs.Leader = obs.LeaderTerm != 0
			obs.Replay = obs.Index <= replayUntil || obs.Restored
			c.rec.Add(Event{Kind: KindState, Node: name, State: obs})
			c.appliedMu.Lock()
			c.applied = max(c.applied, obs.Index)
			c.appliedMu.Unlock()
		},
	}
	// Coordinates off: their sends and the leader's batches would add
	// raft entries and timers that move every recorded seed's schedule,
	// and no check reads them (S89).
	cfg := agent.Config{Server: srvCfg, Local: c.agentLocal(name), ACL: c.aclConfig(true),
		Coordinates: agent.CoordinateConfig{Disable: true}}
	if c.variant != nil {
		cfg.AdjustServer = c.variant.Config
	}
	var gossipTrans *gossipTransport
	if c.gossip != nil {
		var err error
		if gossipTrans, err = newGossipTransport(c.net, c.gossip, name); err != nil {
			return fmt.Errorf("start %s gossip: %w", name, err)
		}
		// The agent's tags carry its role and server port, as the binary's do.
		cfg.Gossip = &agent.GossipConfig{Transport: gossipTrans, Timing: c.gossipTiming(name), Rand: c.gossipRand(name)}
		for _, o := range c.Servers {
			if o != s {
				cfg.Join = append(cfg.Join, c.gossip.addr(o.Name))
			}
		}
		if inc > 0 {
			// The binary's serf keeps a snapshot of the pool in its data
			// directory and rejoins those members when it restarts;
			// serf's snapshot is a real file, which a bubble cannot
			// write, so a restarted server joins the running client
			// agents itself. Without it a leader elected after every
			// server restarted reaps the agents' nodes it does not know
			// yet, which the binary does not do.
			for _, a := range c.Agents {
				if a.Alive() {
					cfg.Join = append(cfg.Join, c.gossip.addr(a.Name))
				}
			}
		}
		cfg.RetryInterval = agentRetryJoin
	}
	ln, err := c.net.Listen(s.httpAddr())
	if err != nil {
		return errors.Join(fmt.Errorf("start %s: %w", name, err), shutdownGossip(gossipTrans))
	}
	if cfg.Server.ServerListener, err = c.net.Listen(s.raftAddr()); err != nil {
		return errors.Join(fmt.Errorf("start %s: %w", name, err), ln.Close(), shutdownGossip(gossipTrans))
	}
	cfg.Listener = ln
	ag, err := agent.New(cfg)
	if err != nil {
		// New closed both listeners; the gossip transport is still ours.
		return errors.Join(fmt.Errorf("start %s: %w", name, err), shutdownGossip(gossipTrans))
	}
	ag.Server().Raft().RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		// Runs synchronously inside raft: the time is the exact virtual
		// instant of the change.
		if st, ok := o.Data.(raft.RaftState); ok && (st == raft.Leader) != (leadTerm.Load() != 0) {
			is := st == raft.Leader
			term := uint64(0)
			if is {
				// raft raised its term when it stood for election, before
				// it took the leader state.
				term = o.Raft.CurrentTerm()
			}
			leadTerm.Store(term)
			c.rec.Add(Event{Kind: KindLeader, Node: name, Leader: &is})
		}
		return false
	}))
	s.ag, s.stopped = ag, &stopped
	return nil
}

// serverDisk is the disk s's storage is given: its own, unless a broken
// variant stands between.
func (c *Cluster) serverDisk(s *server) disk.FS {
	if c.variant != nil && c.variant.Disk != nil {
		return c.variant.Disk(s.Name, s.disk)
	}
	return s.disk
}

// shutdownGossip closes a gossip transport no agent took; t may be nil.
func shutdownGossip(t *gossipTransport) error {
	if t == nil {
		return nil
	}
	return t.Shutdown()
}

// Where a simulated server keeps its data, and its raft log's segment size:
// small, so that a run of a minute rotates segments (the code that repairs
// an interrupted rotation is then under faults too).
const (
	dataDir        = "/data"
	logSegmentSize = 256 << 10
)

// crash stops s as kill -9 would: its disk drops the process's open files
// and lock (the page cache, unsynced writes included, survives), then the
// agent stops at once (agent.Kill: no drain, no leave). Its disk is kept
// for a restart.
func (c *Cluster) Crash(s *server) { c.stop(s, -1, s.disk.Crash) }

// PowerLoss stops s (if it runs) as a power cut would: its disk keeps a
// seeded prefix of each file's and directory's unsynced writes, the last
// one possibly torn at a sector (simdisk's PowerLossRand), and is powered
// on again for a restart.
func (c *Cluster) PowerLoss(s *server) {
	s.mu.Lock()
	inc := s.incarnation
	s.mu.Unlock()
	// One source per server and incarnation: the loss does not depend on
	// which other servers lost power with it, or in what order.
	h := fnv.New64a()
	_, _ = h.Write([]byte(s.Name))
	r := rand.New(rand.NewPCG(c.seed, h.Sum64()^uint64(inc)))
	// From the cut on, nothing the dying process writes or syncs reaches
	// the platter (simdisk's CutPower); the loss itself is applied once it
	// has stopped, so that none of its goroutines meets a disk that is off
	// (raft panics when it cannot save its term).
	s.disk.CutPower()
	c.stop(s, -1, func() {})
	s.disk.PowerLossRand(r)
	s.disk.PowerOn()
}

// crashIncarnation crashes s if incarnation inc still runs: a server that
// stopped itself (Config.Fatal) is not crashed again after a restart.
func (c *Cluster) crashIncarnation(s *server, inc int) {
	if c.stop(s, inc, s.disk.Crash) {
		c.rec.Add(Event{Kind: KindNote, Node: s.Name, Msg: NoteCrashPrefix + s.Name})
	}
}

// stop takes s down if incarnation inc runs (any, with inc -1) and reports
// whether it did: the disk first (cut, as the fault does to it), then the
// agent. The agent's shutdown errors are those of a process whose disk was
// pulled away, and are not reported; a kill -9 reports nothing either.
func (c *Cluster) stop(s *server, inc int, cut func()) bool {
	s.mu.Lock()
	ag, stopped := s.ag, s.stopped
	if ag == nil || (inc >= 0 && inc != s.incarnation) {
		s.mu.Unlock()
		return false
	}
	s.ag = nil
	s.incarnation++
	s.mu.Unlock()
	stopped.Store(true)
	// The node is off the network from the fault's instant: virtual time
	// passes while the agent shuts down, and what it would send meanwhile
	// (an ack, a vote) is not a dead process's to send.
	_ = c.net.Down(s.Name)
	cut()
	_ = ag.Kill()
	c.net.Up(s.Name)
	s.gate.resume(nil)
	return true
}

func (c *Cluster) Shutdown() error {
	var errs []error
	for _, a := range c.Agents {
		errs = append(errs, c.CrashAgent(a))
	}
	for _, s := range c.Servers {
		c.Crash(s)
	}
	if c.gossip != nil {
		// memberlist leaves probe goroutines waiting on their timeouts after
		// Shutdown; virtual time only passes while the bubble's main
		// goroutine lives, so let it pass here until they have returned.
		time.Sleep(gossipDrain)
	}
	return errors.Join(errs...)
}

// gossipDrain outlasts memberlist's longest probe timeout (the TCP fallback
// ping's, one probe interval) with room to spare.
const gossipDrain = 5 * time.Second

// leader returns a running server that currently leads, or nil.
func (c *Cluster) Leader() *server {
	for _, s := range c.Servers {
		if srv := s.Current(); srv != nil {
			if is, _, _ := srv.Leader(); is {
				return s
			}
		}
	}
	return nil
}

// applyOnLeader proposes cmd on whichever server leads, retrying until ctx
// ends: the simulator's stand-in for a catalog write made by Consul's serf.
func (c *Cluster) applyOnLeader(ctx context.Context, cmd model.Command) error {
	for {
		if l := c.Leader(); l != nil {
			if srv := l.Current(); srv != nil {
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := srv.Apply(actx, cmd)
				cancel()
				if err == nil {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apply %v: %w", cmd, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// observe is what one state-machine change did: the sessions it created
// and removed, the keys it changed, the checks whose status it changed, the
// catalog nodes it removed, and the keys it left held by a session that no
// longer exists.
func observe(ch agent.Change) *StateObs {
	before, after := ch.Before, ch.After
	obs := &StateObs{Index: after.Index(), Term: ch.Term, Restored: ch.Command == nil}
	if ch.Command != nil {
		obs.Command, _ = ch.Command.Kind()
	}
	for id, se := range after.Sessions() {
		if _, ok := before.Session(id); !ok {
			obs.NewSess = append(obs.NewSess, se)
		}
	}
	for id, se := range before.Sessions() {
		if _, ok := after.Session(id); !ok {
			obs.GoneSess = append(obs.GoneSess, se)
		}
	}
	bySessionID := func(a, b model.Session) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(obs.NewSess, bySessionID)
	slices.SortFunc(obs.GoneSess, bySessionID)

	var keys []string
	for k, a := range after.Entries() {
		if b, ok := before.Get(k); !ok || !entriesEqual(a, b) {
			keys = append(keys, k)
		}
		if a.Session != "" {
			if _, live := after.Session(a.Session); !live {
				obs.Orphans = append(obs.Orphans, k)
			}
		}
	}
	for k := range before.Entries() {
		if _, ok := after.Get(k); !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	slices.Sort(obs.Orphans)
	for _, k := range keys {
		kc := KeyChange{Key: k}
		if b, ok := before.Get(k); ok {
			kc.Before = &b
		}
		if a, ok := after.Get(k); ok {
			kc.After = &a
		} else {
			kc.DeletedAt, _ = after.Tombstone(k)
		}
		obs.Keys = append(obs.Keys, kc)
	}
	// The tables are walked in map order, without the sorted copies the
	// List accessors make: this runs for every entry on every server. What
	// it records is ordered (or a map) all the same.
	for k, c := range after.Checks() {
		if b, _ := before.Check(k); b.Status != c.Status {
			if obs.Checks == nil {
				obs.Checks = map[string]model.Health{}
			}
			obs.Checks[c.Node+"/"+c.CheckID] = c.Status
		}
	}
	for id, q := range before.Queries() {
		if _, ok := after.Query(id); !ok {
			if obs.GoneQueries == nil {
				obs.GoneQueries = map[string]string{}
			}
			obs.GoneQueries[id] = q.Session
		}
	}
	for id, q := range after.Queries() {
		if q.Session == "" {
			continue
		}
		if _, live := after.Session(q.Session); !live {
			obs.QueryOrphans = append(obs.QueryOrphans, id)
		}
	}
	slices.Sort(obs.QueryOrphans)
	for _, n := range before.Nodes() {
		if _, ok := after.Node(n.Name); !ok {
			obs.GoneNodes = append(obs.GoneNodes, n.Name)
		}
	}
	slices.Sort(obs.GoneNodes)
	for _, n := range after.Nodes() {
		if b, ok := before.Node(n.Name); !ok || !maps.Equal(b.Meta, n.Meta) {
			if obs.NodeMeta == nil {
				obs.NodeMeta = map[string]map[string]string{}
			}
			obs.NodeMeta[n.Name] = maps.Clone(n.Meta)
		}
	}
	return obs
}

func entriesEqual(a, b model.KVEntry) bool {
	return a.LockIndex == b.LockIndex && a.Session == b.Session && a.ModifyIndex == b.ModifyIndex &&
		a.CreateIndex == b.CreateIndex && a.Flags == b.Flags && string(a.Value) == string(b.Value)
}

func SortedMapKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// aclConfig is an agent's acl block in a run with ACLs on (the zero
// value, ACLs off, otherwise): the run's default policy, and the
// management token as the agent's own, so that its node record, the full
// sync's reads and its deregistrations are never refused; a server also
// writes it as the initial management token, and a variant may adjust a
// server's block. There is no default token: a client's agent check is
// written with the client's own least-privilege token, the one it
// registered the check with (CONSUL.md §24), which holds node:write on
// its agent (workload.clientRules).
func (c *Cluster) aclConfig(server bool) agent.ACLConfig {
	if c.acl == nil {
		return agent.ACLConfig{}
	}
	cfg := agent.ACLConfig{Enabled: true, DefaultPolicy: c.acl.DefaultPolicy, Tokens: map[string]string{"agent": c.acl.Management}}
	if server {
		cfg.Tokens["initial_management"] = c.acl.Management
		if c.variant != nil && c.variant.ACL != nil {
			c.variant.ACL(&cfg)
		}
	}
	return cfg
}

// Variant is a deliberately broken server, for the teeth tests. Variants are
// built in test code only; the runner just applies them.
type Variant struct {
	Name string
	// Config adjusts each server's configuration (test-only hooks).
	Config func(*agent.ServerConfig)
	// Clock, if set, replaces the server's Now (its timers keep the true clock).
	Clock func(true *simclock.Clock) func() time.Time
	// Gossip, if set, adjusts the memberlist configuration of the agent
	// (server or client) on node: a broken failure detector.
	Gossip func(node string, c *memberlist.Config)
	// Disk, if set, is what a server's storage makes of its disk (called
	// at every start): a storage layer that ignores a failed fsync, say.
	Disk func(node string, d *simdisk.Disk) disk.FS
	// ACL, if set, adjusts each server's acl block in a run with ACLs on:
	// a server that does not enforce what the run's header says.
	ACL func(*agent.ACLConfig)
}

// gossipTiming is the memberlist adjustment the agent on node gets.
func (c *Cluster) gossipTiming(node string) func(*memberlist.Config) {
	return func(mc *memberlist.Config) {
		simGossip(mc)
		if c.variant != nil && c.variant.Gossip != nil {
			c.variant.Gossip(node, mc)
		}
	}
}
