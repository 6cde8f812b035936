package checks

import (
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/linearizability"
	"github.com/tenurekv/tenure/model"
)

func checkHistory(t *testing.T, ev []core.Event) error {
	t.Helper()
	_, err := linearizability.Check(historyOf(ev), linearizability.Options{Timeout: 10 * time.Second})
	return err
}

// serfTrace: n2's serfHealth goes critical at index 20 (first applied by n1
// at 10s, invalidating s1) and passing at 22; a client then creates s2 bound
// to it and locks k at 16s. n3 lags: it applies index 20 only at 15s, and
// 22 not before the lock. againCritical adds a real second critical
// (index 26) before the lock, which invalidates s2.
func serfTrace(againCritical bool) []core.Event {
	b := newTB()
	b.ev[0].Run.Servers = []string{"n1", "n2", "n3"}
	serf := []string{model.SerfHealthCheckID}
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{Node: "n2", Checks: serf, Behavior: model.BehaviorRelease}}, core.Ret{SessionID: "s1"})
	crit := core.StateObs{Index: 20, Checks: map[string]model.Health{"n2/serfHealth": model.HealthCritical}, GoneSess: []model.Session{{ID: "s1", Node: "n2", Checks: serf, CreateIndex: 5}}}
	pass := core.StateObs{Index: 22, Checks: map[string]model.Health{"n2/serfHealth": model.HealthPassing}}
	b.obs(sec(10), "n1", true, crit)
	b.obs(sec(10.01), "n1", true, pass)
	b.op(sec(12), sec(12.1), "c2", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{Node: "n2", Checks: serf, Behavior: model.BehaviorRelease}}, core.Ret{SessionID: "s2"})
	b.obs(sec(15), "n3", false, crit)
	if againCritical {
		b.obs(sec(15.5), "n1", true, core.StateObs{Index: 26, Checks: map[string]model.Health{"n2/serfHealth": model.HealthCritical}, GoneSess: []model.Session{{ID: "s2", Node: "n2", Checks: serf, CreateIndex: 24}}})
	}
	b.op(sec(16), sec(16.1), "c2", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "s2"}}, core.Ret{OK: true})
	return b.ev
}

// TestHistorySerfChangeOncePerIndex: a lagging server's late apply of a
// serfHealth change is the same change, not a second one.
func TestHistorySerfChangeOncePerIndex(t *testing.T) {
	h := historyOf(serfTrace(false))
	var crits []linearizability.Event
	for _, e := range h.Events {
		if e.Kind == "serfHealth-critical" {
			crits = append(crits, e)
		}
	}
	if len(crits) != 1 || crits[0].Latest != linearizability.Nanos(sec(10)) {
		t.Fatalf("want one critical event ending at 10s, got %+v", crits)
	}
	if err := checkHistory(t, serfTrace(false)); err != nil {
		t.Fatalf("a late apply made the history illegal: %v", err)
	}
	// A real second critical invalidates s2: its lock must then fail.
	if err := checkHistory(t, serfTrace(true)); err == nil {
		t.Fatal("a lock by a session invalidated by a second critical passed")
	}
}

// lateTrace: session a (lock-delay 15s) holds k and is destroyed at 10s;
// n2 restarts and replays the destroy at replayAt, then leads (if leads);
// b's acquire at refuseAt is refused for lock-delay.
func lateTrace(replayAt, refuseAt time.Duration, leads bool) []core.Event {
	b := newTB()
	b.ev[0].Run.Servers = []string{"n1", "n2"}
	b.ev[0].Run.Bounds.MaxLockDelay = 15 * time.Second
	sa := model.Session{ID: "a", Node: "n1", LockDelay: 15 * time.Second, Behavior: model.BehaviorRelease}
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{Node: "n1", Checks: []string{}, LockDelay: 15 * time.Second, Behavior: model.BehaviorRelease}}, core.Ret{SessionID: "a"})
	b.op(sec(1.2), sec(1.3), "c2", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{Node: "n1", Checks: []string{}, Behavior: model.BehaviorRelease}}, core.Ret{SessionID: "b"})
	b.op(sec(2), sec(2.1), "c1", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "a"}}, core.Ret{OK: true})
	released := entry("k", "", 1, 5)
	released.ModifyIndex = 9
	inv := core.StateObs{Index: 9, GoneSess: []model.Session{sa}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: released}}}
	b.op(sec(9.99), sec(10.02), "c1", core.Call{Req: core.ReqDestroy, ID: "a"}, core.Ret{})
	b.obs(sec(10), "n1", true, inv)
	b.obs(sec(10.01), "n2", false, inv)
	replay := core.StateObs{Index: 9, Incarnation: 1, Replay: true, Keys: []core.KeyChange{{Key: "k", After: released}}}
	b.obs(replayAt, "n2", false, replay)
	if leads {
		b.Leader(replayAt+sec(1), "n2", true)
	}
	b.op(refuseAt, refuseAt+sec(0.01), "c2", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "b"}}, core.Ret{LockDelay: true})
	return b.ev
}

// TestLateLockDelayRefusals: a refusal only a replayed arming explains is
// left out of the history; one nothing explains stays, and fails the check.
func TestLateLockDelayRefusals(t *testing.T) {
	excusedOps := func(ev []core.Event) []int {
		var out []int
		for op := range lateRefusals(NewIndex(ev), time.Second) {
			out = append(out, op)
		}
		return out
	}
	cases := []struct {
		name               string
		replayAt, refuseAt time.Duration
		leads              bool
		excused, legal     bool
	}{
		{"within the first delay", sec(20), sec(20), true, false, true},
		{"only the replay explains it", sec(20), sec(30), true, true, true},
		{"the replaying server never led", sec(20), sec(30), false, false, false},
		{"nothing explains it", sec(20), sec(40), true, false, false},
		{"replayed after the refusal", sec(31), sec(30), true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := lateTrace(tc.replayAt, tc.refuseAt, tc.leads)
			if got := len(excusedOps(ev)) == 1; got != tc.excused {
				t.Fatalf("excused = %v, want %v", got, tc.excused)
			}
			err := checkHistory(t, ev)
			if (err == nil) != tc.legal {
				t.Fatalf("check: %v, want legal = %v", err, tc.legal)
			}
		})
	}
}

// TestArmingsOnlyFromInvalidations: a client's release (index 11) before
// the destroy of the holder (12) arms nothing; a destroy that releases the
// key itself, or deletes it (delete behaviour), arms at its own index with
// the holder's LockIndex.
func TestArmingsOnlyFromInvalidations(t *testing.T) {
	b := newTB()
	sa := model.Session{ID: "a", LockDelay: 15 * time.Second}
	rel := entry("k", "", 1, 5)
	rel.ModifyIndex = 11
	b.obs(sec(3), "n3", false, core.StateObs{Index: 11, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: rel}}})
	b.obs(sec(3), "n3", false, core.StateObs{Index: 12, GoneSess: []model.Session{sa}})
	ix := NewIndex(b.ev)
	if arms := armings(ix, firstApplies(ix)); len(arms) != 0 {
		t.Fatalf("a release before the destroy counted as an arming: %+v", *arms[0])
	}

	b = newTB()
	rel.ModifyIndex = 12
	b.obs(sec(3), "n3", false, core.StateObs{Index: 12, GoneSess: []model.Session{sa},
		Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: rel}}})
	ix = NewIndex(b.ev)
	if arms := armings(ix, firstApplies(ix)); len(arms) != 1 || arms[0].index != 12 || arms[0].holderLI != 1 {
		t.Fatalf("the destroy's release is not an arming: %v", arms)
	}

	b = newTB()
	sd := model.Session{ID: "d", LockDelay: 15 * time.Second, Behavior: model.BehaviorDelete}
	b.obs(sec(3), "n1", true, core.StateObs{Index: 135, GoneSess: []model.Session{sd},
		Keys: []core.KeyChange{{Key: "k", Before: entry("k", "d", 5, 100), DeletedAt: 135}}})
	ix = NewIndex(b.ev)
	if arms := armings(ix, firstApplies(ix)); len(arms) != 1 || arms[0].index != 135 || arms[0].holderLI != 5 {
		t.Fatalf("the delete-behaviour invalidation is not an arming at 135: %v", arms)
	}
}

// TestHistoryDropsNotApplied: a request that certainly took no effect is
// left out; an unknown one stays, pending forever.
func TestHistoryDropsNotApplied(t *testing.T) {
	b := newTB()
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}, core.Ret{Outcome: core.OutNotApplied})
	b.op(sec(2), sec(2.1), "c1", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}, core.Ret{Outcome: core.OutUnknown})
	h := historyOf(b.ev)
	if len(h.Ops) != 1 || !h.Ops[0].Unknown {
		t.Fatalf("ops = %+v, want only the unknown one", h.Ops)
	}
}

// TestHistoryExpiryAfterNotAppliedDestroy: a destroy that never reached a
// leader does not explain the session's later removal: that is a TTL
// expiry, and the history must say so.
func TestHistoryExpiryAfterNotAppliedDestroy(t *testing.T) {
	b := newTB()
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{TTL: "10s", Checks: []string{}}}, core.Ret{SessionID: "s1"})
	b.op(sec(2), sec(2.1), "c1", core.Call{Req: core.ReqDestroy, ID: "s1"}, core.Ret{Outcome: core.OutNotApplied})
	b.obs(sec(25), "n1", true, core.StateObs{Index: 30, GoneSess: []model.Session{{ID: "s1", TTL: "10s"}}})
	h := historyOf(b.ev)
	if len(h.Events) != 1 || h.Events[0].Kind != "ttl-expiry" {
		t.Fatalf("events = %+v, want one ttl-expiry", h.Events)
	}
}

// deregTrace: agent a1 registers (index 10), a client creates s1 on it and
// then the catalog removes a1 with s1 (index 20, at 10s). A renew of s1 and
// a create through a1 fail; a1 registers again (index 30, at 15s) and a
// create succeeds. If deregistered is false the node is never removed, so
// the failed create has no cause (the seed-5139 shape, the other way round).
func deregTrace(deregistered bool) []core.Event {
	b := newTB()
	b.ev[0].Run.Servers = []string{"n1", "n2"}
	serf := []string{model.SerfHealthCheckID}
	reg := core.StateObs{Index: 10, Checks: map[string]model.Health{"a1/serfHealth": model.HealthPassing}}
	b.obs(sec(1), "n1", true, reg)
	create := core.Call{Req: core.ReqCreate, Create: &model.CreateSession{Node: "a1", Checks: serf, Behavior: model.BehaviorRelease}}
	b.op(sec(2), sec(2.1), "c1", create, core.Ret{SessionID: "s1"})
	if deregistered {
		b.obs(sec(10), "n1", true, core.StateObs{Index: 20, GoneNodes: []string{"a1"},
			GoneSess: []model.Session{{ID: "s1", Node: "a1", Checks: serf, CreateIndex: 12}}})
		b.obs(sec(10.5), "n2", false, core.StateObs{Index: 20, GoneNodes: []string{"a1"},
			GoneSess: []model.Session{{ID: "s1", Node: "a1", Checks: serf, CreateIndex: 12}}})
	}
	b.op(sec(11), sec(11.1), "c1", core.Call{Req: core.ReqRenew, ID: "s1"}, core.Ret{Found: !deregistered})
	b.op(sec(12), sec(12.1), "c1", create, core.Ret{Outcome: core.OutFail, Status: 400, Err: "Missing node registration"})
	reg.Index = 30
	b.obs(sec(15), "n1", true, reg)
	b.op(sec(16), sec(16.1), "c1", create, core.Ret{SessionID: "s2"})
	return b.ev
}

func withoutKind(h linearizability.History, kind string) (linearizability.History, int) {
	n := 0
	h.Events = slices.DeleteFunc(slices.Clone(h.Events), func(e linearizability.Event) bool {
		if e.Kind == kind {
			n++
			return true
		}
		return false
	})
	return h, n
}

// TestHistoryNodeDeregister: a node's removal is an event of the history,
// once per index however many servers apply it; it explains both the
// refused create and its session's removal, which is then no TTL expiry.
// Without it, the same history is illegal.
func TestHistoryNodeDeregister(t *testing.T) {
	h := historyOf(deregTrace(true))
	var dereg []linearizability.Event
	for _, e := range h.Events {
		switch e.Kind {
		case "node-deregister":
			dereg = append(dereg, e)
		case "ttl-expiry":
			t.Fatalf("the session removed with its node got a ttl-expiry event: %+v", e)
		}
	}
	if len(dereg) != 1 || dereg[0].Latest != linearizability.Nanos(sec(10)) ||
		dereg[0].Command.Deregister == nil || dereg[0].Command.Deregister.Node != "a1" {
		t.Fatalf("want one deregistration of a1 ending at 10s, got %+v", dereg)
	}
	opts := linearizability.Options{Timeout: 10 * time.Second}
	if _, err := linearizability.Check(h, opts); err != nil {
		t.Fatalf("a deregistered node's refused create made the history illegal: %v", err)
	}
	bare, n := withoutKind(h, "node-deregister")
	if n != 1 {
		t.Fatalf("removed %d deregistrations, want 1", n)
	}
	if _, err := linearizability.Check(bare, opts); err == nil {
		t.Fatal("without the deregistration, the refused create and the session's removal passed")
	}
	// Even with the session's removal explained as an expiry, the refused
	// create alone is illegal: that was the seed-5139 false alarm.
	bare.Events = append(bare.Events, linearizability.Event{Kind: "ttl-expiry",
		Earliest: dereg[0].Earliest, Latest: dereg[0].Latest, Sessions: []string{"s1"}})
	if _, err := linearizability.Check(bare, opts); err == nil {
		t.Fatal("without the deregistration, the refused create passed")
	}
}

// TestHistoryMissingNodeNeverDeregistered: a create refused for a missing
// node while the node was registered throughout is still flagged.
func TestHistoryMissingNodeNeverDeregistered(t *testing.T) {
	if err := checkHistory(t, deregTrace(false)); err == nil {
		t.Fatal("a create refused for a registered node passed")
	}
}

// TestHistoryCatalogLogOrder: a deregistration and the re-registration
// right after it, first applied at the same instant and observed out of
// order, meet the model in log order; so do check changes around them.
func TestHistoryCatalogLogOrder(t *testing.T) {
	b := newTB()
	pass := map[string]model.Health{"a1/serfHealth": model.HealthPassing}
	crit := map[string]model.Health{"a1/serfHealth": model.HealthCritical}
	b.obs(sec(5), "n1", true, core.StateObs{Index: 41, Checks: pass})
	b.obs(sec(5), "n1", true, core.StateObs{Index: 40, GoneNodes: []string{"a1"}})
	b.obs(sec(5), "n1", true, core.StateObs{Index: 39, Checks: crit})
	b.obs(sec(5), "n1", true, core.StateObs{Index: 42, GoneNodes: []string{"a1"}})
	var kinds []string
	var last linearizability.Nanos = -1
	for _, e := range historyOf(b.ev).Events {
		kinds = append(kinds, e.Kind)
		if e.Earliest <= last {
			t.Fatalf("event %s starts at %d, not after the previous one's end %d", e.Kind, e.Earliest, last)
		}
		last = e.Latest
	}
	want := []string{"serfHealth-critical", "node-deregister", "serfHealth-passing", "node-deregister"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}
