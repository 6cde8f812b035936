package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl"
	"github.com/tenurekv/tenure/impl/httpapi"
	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simclock"
	"github.com/tenurekv/tenure/sim/simnet"
)

// httpPort is every server's HTTP port on the simulated network.
const httpPort = "8500"

// server is one simulated server across its incarnations: the stores survive
// a crash (the in-memory equivalent of its disk), everything else is rebuilt.
type server struct {
	name  string
	clock *simclock.Clock // the node's true (skewed) clock
	gate  *pauseClock     // what the server is given
	logs  *raft.InmemStore
	snaps *raft.InmemSnapshotStore

	mu          sync.Mutex
	srv         *impl.Server
	hs          *http.Server
	incarnation int
	watchStop   chan struct{}
	watchDone   chan struct{}
	ids         int
}

func (s *server) httpAddr() string { return s.name + ":" + httpPort }

// current returns the running server, nil while crashed.
func (s *server) current() *impl.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// cluster runs the servers inside the bubble.
type cluster struct {
	net     *simnet.Network
	rec     *Recorder
	servers []*server
	peers   []impl.Peer
	variant *Variant
	// applied is the highest index any server has applied, so a restarted
	// server's replay of older entries is marked as such.
	appliedMu sync.Mutex
	applied   uint64
}

// simTransport is an HTTP transport whose connections travel on the
// simulated network from node from. Keep-alives are off, so every request
// dials afresh: a pooled connection would make which request uses which
// connection depend on goroutine scheduling.
func simTransport(n *simnet.Network, from string) *http.Transport {
	return &http.Transport{DialContext: n.Dialer(from), DisableKeepAlives: true}
}

func newCluster(n *simnet.Network, rec *Recorder, names []string, clocks map[string]ClockSkew, v *Variant) (*cluster, error) {
	c := &cluster{net: n, rec: rec, variant: v}
	for _, name := range names {
		c.peers = append(c.peers, impl.Peer{Name: name, RaftAddr: name})
	}
	for _, name := range names {
		sk := clocks[name]
		clk, err := simclock.New(sk.Offset, sk.Rate)
		if err != nil {
			return nil, fmt.Errorf("clock of %s: %w", name, err)
		}
		s := &server{name: name, clock: clk, gate: &pauseClock{inner: clk},
			logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		if v != nil && v.Clock != nil {
			s.gate.now = v.Clock(clk)
		}
		c.servers = append(c.servers, s)
	}
	for _, s := range c.servers {
		if err := c.start(s); err != nil {
			c.shutdown()
			return nil, err
		}
	}
	return c, nil
}

// start boots s on its stores with a fresh transport, HTTP listener, leader
// observer and state watcher.
func (c *cluster) start(s *server) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return fmt.Errorf("start %s: already running", s.name)
	}
	trans, err := c.net.NewTransport(raft.ServerAddress(s.name))
	if err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	name, inc := s.name, s.incarnation
	cfg := impl.Config{
		NodeName: s.name, HTTPAddr: s.httpAddr(), Clock: s.gate,
		Transport: trans, LogStore: s.logs, StableStore: s.logs, SnapshotStore: s.snaps,
		Peers: c.peers, RoundTripper: simTransport(c.net, s.name),
		// Session IDs must not depend on crypto/rand, or no run replays.
		// Counter first: failure reports show IDs cut to 8 characters.
		NewID: func() string {
			s.ids++
			return fmt.Sprintf("%d.%s.%d", s.ids, name, inc)
		},
	}
	if c.variant != nil && c.variant.Config != nil {
		c.variant.Config(&cfg)
	}
	srv, err := impl.NewServer(cfg)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	leader := false
	srv.Raft().RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		// Runs synchronously inside raft: the time is the exact virtual
		// instant of the change.
		if st, ok := o.Data.(raft.RaftState); ok && (st == raft.Leader) != leader {
			leader = st == raft.Leader
			is := leader // the event needs its own copy; leader changes later
			c.rec.Add(Event{Kind: KindLeader, Node: name, Leader: &is})
		}
		return false
	}))
	ln, err := c.net.Listen(s.httpAddr())
	if err != nil {
		return errors.Join(fmt.Errorf("listen %s: %w", s.httpAddr(), err), srv.Shutdown())
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{Forward: simTransport(c.net, s.name)})}
	go func() { _ = hs.Serve(ln) }()
	s.srv, s.hs = srv, hs
	s.watchStop, s.watchDone = make(chan struct{}), make(chan struct{})
	c.appliedMu.Lock()
	replayUntil := c.applied
	c.appliedMu.Unlock()
	if s.incarnation == 0 {
		replayUntil = 0
	}
	go c.watch(s, srv, s.incarnation, replayUntil, s.watchStop, s.watchDone)
	return nil
}

// crash stops s as a kill would: HTTP and raft go down at once; the stores
// are kept for a restart.
func (c *cluster) crash(s *server) error {
	s.mu.Lock()
	srv, hs := s.srv, s.hs
	stop, done := s.watchStop, s.watchDone
	s.srv, s.hs = nil, nil
	if srv != nil {
		s.incarnation++
	}
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	close(stop)
	<-done
	err := hs.Close()
	if serr := srv.Shutdown(); serr != nil {
		err = errors.Join(err, fmt.Errorf("shutdown %s: %w", s.name, serr))
	}
	s.gate.resume()
	return err
}

func (c *cluster) shutdown() error {
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, c.crash(s))
	}
	return errors.Join(errs...)
}

// leader returns a running server that currently leads, or nil.
func (c *cluster) leader() *server {
	for _, s := range c.servers {
		if srv := s.current(); srv != nil {
			if is, _, _ := srv.Leader(); is {
				return s
			}
		}
	}
	return nil
}

// applyOnLeader proposes cmd on whichever server leads, retrying until ctx
// ends: the simulator's stand-in for a catalog write made by Consul's serf.
func (c *cluster) applyOnLeader(ctx context.Context, cmd model.Command) error {
	for {
		if l := c.leader(); l != nil {
			if srv := l.current(); srv != nil {
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

// snapshotState copies what the watcher diffs.
type stateCopy struct {
	index    uint64
	sessions map[string]model.Session
	kv       map[string]model.KVEntry
	checks   map[model.CheckKey]model.Check
	tombs    map[string]uint64
	issued   map[string]uint64
	delayed  map[string]uint64
	sessIdx  uint64
}

func copyState(st *model.State) stateCopy {
	snap := st.Snapshot()
	for k, v := range snap.KV {
		v.Value = append([]byte(nil), v.Value...)
		snap.KV[k] = v
	}
	return stateCopy{index: st.Index(), sessIdx: snap.Tables.Sessions, tombs: snap.Tombstones, issued: snap.LockIssued,
		delayed: snap.DelayedAt, sessions: snap.Sessions, kv: snap.KV, checks: snap.Checks}
}

// watch records every applied change of one server incarnation. synctest
// runs it before virtual time moves on, so each observation carries the
// exact virtual instant of the apply; several entries applied back to back
// may be seen as one change.
func (c *cluster) watch(s *server, srv *impl.Server, inc int, replayUntil uint64, stop, done chan struct{}) {
	defer close(done)
	prev := stateCopy{sessions: map[string]model.Session{}, kv: map[string]model.KVEntry{}, checks: map[model.CheckKey]model.Check{}}
	for {
		ch := srv.Changed()
		var cur stateCopy
		srv.Read(func(st *model.State) { cur = copyState(st) })
		if cur.index != prev.index || len(cur.sessions) != len(prev.sessions) {
			isLeader, _, _ := srv.Leader()
			obs := diffStates(prev, cur)
			obs.Leader, obs.Clock, obs.Incarnation = isLeader, s.clock.Now(), inc
			obs.Replay = cur.index <= replayUntil
			c.rec.Add(Event{Kind: KindState, Node: s.name, State: obs})
			c.appliedMu.Lock()
			c.applied = max(c.applied, cur.index)
			c.appliedMu.Unlock()
			prev = cur
		}
		select {
		case <-ch:
		case <-stop:
			return
		}
	}
}

func diffStates(prev, cur stateCopy) *StateObs {
	obs := &StateObs{Index: cur.index, SessionsIndex: cur.sessIdx}
	for _, id := range sortedMapKeys(cur.sessions) {
		if _, ok := prev.sessions[id]; !ok {
			obs.NewSess = append(obs.NewSess, cur.sessions[id])
		}
	}
	for _, id := range sortedMapKeys(prev.sessions) {
		if _, ok := cur.sessions[id]; !ok {
			obs.GoneSess = append(obs.GoneSess, prev.sessions[id])
		}
	}
	keys := map[string]bool{}
	for k := range prev.kv {
		keys[k] = true
	}
	for k := range cur.kv {
		keys[k] = true
	}
	for _, k := range sortedMapKeys(keys) {
		b, hadB := prev.kv[k]
		a, hasA := cur.kv[k]
		if hadB && hasA && entriesEqual(a, b) {
			continue
		}
		kc := KeyChange{Key: k, Issued: cur.issued[k], DelayedAt: cur.delayed[k]}
		if hadB {
			kc.Before = &b
		}
		if hasA {
			kc.After = &a
		} else {
			kc.DeletedAt = cur.tombs[k]
		}
		obs.Keys = append(obs.Keys, kc)
	}
	for _, k := range sortedMapKeys(cur.kv) {
		if e := cur.kv[k]; e.Session != "" {
			if _, live := cur.sessions[e.Session]; !live {
				obs.Orphans = append(obs.Orphans, k)
			}
		}
	}
	for ck, c := range cur.checks {
		if prev.checks[ck].Status != c.Status {
			if obs.Checks == nil {
				obs.Checks, obs.CheckIndex = map[string]model.Health{}, map[string]uint64{}
			}
			obs.Checks[ck.Node+"/"+ck.CheckID] = c.Status
			obs.CheckIndex[ck.Node+"/"+ck.CheckID] = c.ModifyIndex
		}
	}
	return obs
}

func entriesEqual(a, b model.KVEntry) bool {
	return a.LockIndex == b.LockIndex && a.Session == b.Session && a.ModifyIndex == b.ModifyIndex &&
		a.CreateIndex == b.CreateIndex && a.Flags == b.Flags && string(a.Value) == string(b.Value)
}

func sortedMapKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Variant is a deliberately broken server, for the teeth tests. Variants are
// built in test code only; the runner just applies them.
type Variant struct {
	Name string
	// Config adjusts each server's configuration (test-only hooks).
	Config func(*impl.Config)
	// Clock, if set, replaces the server's Now (its timers keep the true clock).
	Clock func(true *simclock.Clock) func() time.Time
}
