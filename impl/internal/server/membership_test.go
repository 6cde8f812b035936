package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/model"
)

// fakeMembership is an in-memory gossip pool: the test sets each member's
// status and the change is announced to every server, as serf would
// announce it on each agent. A fakeMembership is the first server's view;
// view adds another.
type fakeMembership struct {
	*fakePool
	changes chan reconcile.Member
}

type fakePool struct {
	mu           sync.Mutex
	members      map[string]reconcile.Member
	views        []chan reconcile.Member
	bootstrapped bool
}

func newFakeMembership(ms ...reconcile.Member) *fakeMembership {
	p := &fakePool{members: map[string]reconcile.Member{}}
	for _, m := range ms {
		p.members[m.Name] = m
	}
	return p.view()
}

func (p *fakePool) view() *fakeMembership {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := &fakeMembership{fakePool: p, changes: make(chan reconcile.Member, 64)}
	p.views = append(p.views, v.changes)
	return v
}

func (f *fakePool) Members() []reconcile.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []reconcile.Member
	for _, m := range f.members {
		out = append(out, m)
	}
	return out
}

func (f *fakeMembership) Changes() <-chan reconcile.Member { return f.changes }

func (f *fakePool) MarkBootstrapped() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bootstrapped = true
	return nil
}

// set changes a member (forget removes it, as a reap does) and announces
// announced, which may differ from the truth to model a stale change.
func (f *fakePool) set(m reconcile.Member, forget bool, announced reconcile.Member) {
	f.mu.Lock()
	if forget {
		delete(f.members, m.Name)
	} else {
		f.members[m.Name] = m
	}
	views := slices.Clone(f.views)
	f.mu.Unlock()
	for _, v := range views {
		select {
		case v <- announced:
		default: // a full view drops it, as a full gossip channel would
		}
	}
}

// waitState polls the server's state until ok holds.
func waitState(t *testing.T, s *Server, what string, ok func(st *model.State) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var done bool
		s.Read(func(st *model.State) { done = ok(st) })
		if done {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

func serfStatus(st *model.State, node string) model.Health {
	c, ok := st.Check(model.CheckKey{Node: node, CheckID: model.SerfHealthCheckID})
	if !ok {
		return ""
	}
	return c.Status
}

// TestLeaderReconcilesMembership (S10, S12, CONSUL.md §13): with a gossip
// membership the leader registers alive members (itself included, which
// is what lets session creates through it proceed), sets a failed member's
// serfHealth critical at once (invalidating the sessions bound to it),
// deregisters a member that left, reaps on its periodic pass a catalog node
// with serfHealth that gossip does not know, and reads a member's status
// afresh rather than trusting a stale change.
func TestLeaderReconcilesMembership(t *testing.T) {
	members := newFakeMembership(
		reconcile.Member{Name: "dev", Address: "127.0.0.1", Status: reconcile.Alive},
		reconcile.Member{Name: "n2", Address: "10.0.0.2", Status: reconcile.Alive},
		reconcile.Member{Name: "n3", Address: "10.0.0.3", Status: reconcile.Alive},
		reconcile.Member{Name: "n4", Address: "10.0.0.4", Status: reconcile.Alive},
	)
	s, clock := startDev(t, Config{Membership: members})
	waitState(t, s, "every alive member is registered passing", func(st *model.State) bool {
		return serfStatus(st, "dev") == model.HealthPassing && serfStatus(st, "n2") == model.HealthPassing &&
			serfStatus(st, "n3") == model.HealthPassing && serfStatus(st, "n4") == model.HealthPassing
	})

	ctx := context.Background()
	res, err := s.Apply(ctx, model.Command{CreateSession: &model.CreateSession{Node: "n2", Checks: []string{model.SerfHealthCheckID}}})
	if err != nil || res.Failed() {
		t.Fatalf("create session on n2: %v %v", err, res.Err)
	}
	bound := res.SessionID

	members.set(reconcile.Member{Name: "n2", Address: "10.0.0.2", Status: reconcile.Failed}, false,
		reconcile.Member{Name: "n2", Status: reconcile.Failed})
	waitState(t, s, "failed n2 is critical and its bound session gone", func(st *model.State) bool {
		_, live := st.Session(bound)
		n, _ := st.Node("n2")
		return serfStatus(st, "n2") == model.HealthCritical && !live && n.Address == "10.0.0.2"
	})

	members.set(reconcile.Member{Name: "n2", Status: reconcile.Left}, false, reconcile.Member{Name: "n2", Status: reconcile.Left})
	waitState(t, s, "n2, which left, is deregistered", func(st *model.State) bool {
		_, known := st.Node("n2")
		return !known
	})

	// A stale change: n3 is announced failed, but gossip says alive now.
	members.set(reconcile.Member{Name: "n3", Address: "10.0.0.3", Status: reconcile.Alive}, false,
		reconcile.Member{Name: "n3", Status: reconcile.Failed})
	// A member serf forgot is reaped when its change arrives.
	members.set(reconcile.Member{Name: "n4"}, true, reconcile.Member{Name: "n4", Status: reconcile.Alive})
	waitState(t, s, "the stale change was read afresh and forgotten n4 reaped", func(st *model.State) bool {
		_, n4 := st.Node("n4")
		return serfStatus(st, "n3") == model.HealthPassing && !n4
	})

	// Hand-registered nodes: one claims a serfHealth gossip never heard
	// of, one has no serfHealth. The periodic full pass reaps the first.
	// A third, Ghost5, then joins gossip as ghost5: node names compare
	// ignoring case (S62), so gossip knows it and it stays.
	for _, reg := range []model.Register{
		{Node: "ghost", Address: "10.0.0.9", Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}},
		{Node: "external", Address: "10.0.0.8"},
		{Node: "Ghost5", Address: "10.0.0.5", Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}},
	} {
		if res, err := s.Apply(ctx, model.Command{Register: &reg}); err != nil || res.Failed() {
			t.Fatalf("register %s: %v %v", reg.Node, err, res.Err)
		}
	}
	joined := reconcile.Member{Name: "ghost5", Address: "10.0.0.5", Status: reconcile.Alive}
	members.set(joined, false, joined)
	// Consul's period: no full pass a second before 60 s, one at 60 s.
	clock.Advance(59 * time.Second)
	time.Sleep(50 * time.Millisecond)
	s.Read(func(st *model.State) {
		if _, ghost := st.Node("ghost"); !ghost {
			t.Fatal("a full pass ran before 60 s")
		}
	})
	clock.Advance(time.Second)
	waitState(t, s, "the full pass reaps ghost and keeps external", func(st *model.State) bool {
		_, ghost := st.Node("ghost")
		_, external := st.Node("external")
		return !ghost && external
	})
	s.Read(func(st *model.State) {
		if n, ok := st.Node("Ghost5"); !ok || n.Name != "Ghost5" {
			t.Errorf("Ghost5, in gossip as ghost5, was reaped or renamed: %+v %v", n, ok)
		}
	})
}

// gossipCluster is servers on raft's in-memory transport that share one
// fake gossip pool and have no static peer list.
type gossipCluster struct {
	t     *testing.T
	pool  *fakePool
	nodes map[string]*testNode
}

func (g *gossipCluster) start(name string, expect int) *Server {
	g.t.Helper()
	nd := &testNode{name: name, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
	_, nd.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(name), 100*time.Millisecond)
	for _, o := range g.nodes {
		nd.trans.Connect(raft.ServerAddress(o.name), o.trans)
		o.trans.Connect(raft.ServerAddress(name), nd.trans)
	}
	srv, err := NewServer(Config{NodeName: name, HTTPAddr: name + ".http", Transport: nd.trans,
		LogStore: nd.logs, StableStore: nd.logs, SnapshotStore: nd.snaps, tuneRaft: fastRaft,
		Membership: g.pool.view(), BootstrapExpect: expect})
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { _ = srv.Shutdown() })
	nd.srv = srv
	g.nodes[name] = nd
	m := reconcile.Member{Name: name, Address: name + ".http", Status: reconcile.Alive, Server: true, RaftAddr: name, Expect: expect}
	g.pool.set(m, false, m)
	return srv
}

func (g *gossipCluster) voters(s *Server) []string {
	fut := s.raft.GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	var out []string
	for _, v := range fut.Configuration().Servers {
		out = append(out, string(v.ID))
	}
	slices.Sort(out)
	return out
}

func (g *gossipCluster) leader() *Server {
	for _, nd := range g.nodes {
		if nd.srv.raft.State() == raft.Leader {
			return nd.srv
		}
	}
	return nil
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLoneServerWithoutExpectWaits (S54): a server with no
// -bootstrap-expect never forms a cluster of its own; it waits for a
// leader to add it.
func TestLoneServerWithoutExpectWaits(t *testing.T) {
	g := &gossipCluster{t: t, pool: newFakeMembership().fakePool, nodes: map[string]*testNode{}}
	s := g.start("alone", 0)
	time.Sleep(300 * time.Millisecond) // several election timeouts and bootstrap rechecks
	if s.inCluster() {
		t.Fatal("a server without -bootstrap-expect formed a cluster alone")
	}
}

// TestBootstrapExpectAndDynamicVoters (S53, CONSUL.md §13): three servers
// expecting 3 form a cluster only once all three have joined; a fourth
// server that joins later is added as a voter by the leader, and removed
// when it leaves; a server that merely fails stays a voter.
func TestBootstrapExpectAndDynamicVoters(t *testing.T) {
	g := &gossipCluster{t: t, pool: newFakeMembership().fakePool, nodes: map[string]*testNode{}}
	s1 := g.start("s1", 3)
	g.start("s2", 3)
	time.Sleep(300 * time.Millisecond) // several election timeouts
	if s1.inCluster() {
		t.Fatal("two servers expecting 3 formed a cluster")
	}
	g.start("s3", 3)
	waitUntil(t, "the three form a cluster with a leader", func() bool {
		l := g.leader()
		return l != nil && slices.Equal(g.voters(l), []string{"s1", "s2", "s3"})
	})
	waitUntil(t, "every server told the pool it is in a cluster", func() bool {
		g.pool.mu.Lock()
		defer g.pool.mu.Unlock()
		return g.pool.bootstrapped
	})

	g.start("s4", 0)
	waitUntil(t, "the leader adds s4 as a voter", func() bool {
		l := g.leader()
		return l != nil && slices.Contains(g.voters(l), "s4")
	})

	failed := reconcile.Member{Name: "s4", Address: "s4.http", Status: reconcile.Failed, Server: true, RaftAddr: "s4"}
	g.pool.set(failed, false, failed)
	waitUntil(t, "failed s4 is critical", func() bool {
		var st model.Health
		g.leader().Read(func(s *model.State) { st = serfStatus(s, "s4") })
		return st == model.HealthCritical
	})
	if !slices.Contains(g.voters(g.leader()), "s4") {
		t.Fatal("a failed server was removed from raft")
	}

	left := failed
	left.Status = reconcile.Left
	g.pool.set(left, false, left)
	waitUntil(t, "s4, which left, is no voter and no node", func() bool {
		l := g.leader()
		if l == nil || slices.Contains(g.voters(l), "s4") {
			return false
		}
		var known bool
		l.Read(func(s *model.State) { _, known = s.Node("s4") })
		return !known
	})
}

// TestFollowersRegisterThemselvesWithoutGossip (S47): servers run without a
// membership (as the simulator's recipe runs do) register their own nodes,
// followers through the leader's catalog API.
func TestFollowersRegisterThemselvesWithoutGossip(t *testing.T) {
	c := newTestClusterOf(t, 3, nil)
	c.waitRegistered()
	c.router.mu.Lock()
	calls, tokens := c.router.calls, c.router.tokens
	c.router.mu.Unlock()
	if calls == 0 {
		t.Fatal("no follower registered itself through the leader's catalog API")
	}
	// Each carries its agent's own token, read as it is sent, which the
	// leader decides it with when ACLs are on.
	for _, nt := range tokens {
		if nt[1] != "agent-of-"+nt[0] {
			t.Errorf("%s's registration carried token %q", nt[0], nt[1])
		}
	}
	c.read(c.leader(), func(st *model.State) {
		for _, nd := range c.nodes {
			if serfStatus(st, nd.name) != model.HealthPassing {
				t.Errorf("%s's serfHealth is %q, want passing", nd.name, serfStatus(st, nd.name))
			}
		}
	})
}
