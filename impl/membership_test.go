package impl

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/reconcile"
	"github.com/tenurekv/tenure/model"
)

// fakeMembership is an in-memory gossip pool: the test sets each member's
// status and the change is announced as serf would announce it.
type fakeMembership struct {
	mu      sync.Mutex
	members map[string]reconcile.Member
	changes chan reconcile.Member
}

func newFakeMembership(ms ...reconcile.Member) *fakeMembership {
	f := &fakeMembership{members: map[string]reconcile.Member{}, changes: make(chan reconcile.Member, 16)}
	for _, m := range ms {
		f.members[m.Name] = m
	}
	return f
}

func (f *fakeMembership) Members() []reconcile.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []reconcile.Member
	for _, m := range f.members {
		out = append(out, m)
	}
	return out
}

func (f *fakeMembership) Changes() <-chan reconcile.Member { return f.changes }

// set changes a member (forget removes it, as a reap does) and announces
// announced, which may differ from the truth to model a stale change.
func (f *fakeMembership) set(m reconcile.Member, forget bool, announced reconcile.Member) {
	f.mu.Lock()
	if forget {
		delete(f.members, m.Name)
	} else {
		f.members[m.Name] = m
	}
	f.mu.Unlock()
	f.changes <- announced
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
		reconcile.Member{Name: "dev", Address: "127.0.0.1:8500", Status: reconcile.Alive},
		reconcile.Member{Name: "n2", Address: "10.0.0.2:8500", Status: reconcile.Alive},
		reconcile.Member{Name: "n3", Address: "10.0.0.3:8500", Status: reconcile.Alive},
		reconcile.Member{Name: "n4", Address: "10.0.0.4:8500", Status: reconcile.Alive},
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

	members.set(reconcile.Member{Name: "n2", Address: "10.0.0.2:8500", Status: reconcile.Failed}, false,
		reconcile.Member{Name: "n2", Status: reconcile.Failed})
	waitState(t, s, "failed n2 is critical and its bound session gone", func(st *model.State) bool {
		_, live := st.Session(bound)
		n, _ := st.Node("n2")
		return serfStatus(st, "n2") == model.HealthCritical && !live && n.Address == "10.0.0.2:8500"
	})

	members.set(reconcile.Member{Name: "n2", Status: reconcile.Left}, false, reconcile.Member{Name: "n2", Status: reconcile.Left})
	waitState(t, s, "n2, which left, is deregistered", func(st *model.State) bool {
		_, known := st.Node("n2")
		return !known
	})

	// A stale change: n3 is announced failed, but gossip says alive now.
	members.set(reconcile.Member{Name: "n3", Address: "10.0.0.3:8500", Status: reconcile.Alive}, false,
		reconcile.Member{Name: "n3", Status: reconcile.Failed})
	// A member serf forgot is reaped when its change arrives.
	members.set(reconcile.Member{Name: "n4"}, true, reconcile.Member{Name: "n4", Status: reconcile.Alive})
	waitState(t, s, "the stale change was read afresh and forgotten n4 reaped", func(st *model.State) bool {
		_, n4 := st.Node("n4")
		return serfStatus(st, "n3") == model.HealthPassing && !n4
	})

	// Hand-registered nodes: one claims a serfHealth gossip never heard
	// of, one has no serfHealth. The periodic full pass reaps the first.
	for _, reg := range []model.Register{
		{Node: "ghost", Address: "10.0.0.9:8500", Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}},
		{Node: "external", Address: "10.0.0.8:8500"},
	} {
		if res, err := s.Apply(ctx, model.Command{Register: &reg}); err != nil || res.Failed() {
			t.Fatalf("register %s: %v %v", reg.Node, err, res.Err)
		}
	}
	clock.Advance(fullReconcileEvery)
	waitState(t, s, "the full pass reaps ghost and keeps external", func(st *model.State) bool {
		_, ghost := st.Node("ghost")
		_, external := st.Node("external")
		return !ghost && external
	})
}
