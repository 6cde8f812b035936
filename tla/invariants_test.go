package tla

import (
	"strings"
	"testing"
)

// heldState is a reachable "release"-scenario state: s1 live and holding k
// with LockIndex 1 in tenure 1, client a believing so, at index 2.
func heldState(t *testing.T) *abs {
	t.Helper()
	sc := scenarios["Rel"]
	w, err := newWorld(&sc)
	if err != nil {
		t.Fatal(err)
	}
	a := w.abs()
	a.Index = 2
	a.SessState[0] = sessLive
	a.TTLLeft[0] = 2
	a.KV[0] = kvRec{Exists: true, LockIndex: 1, Session: "s1", ModifyIndex: 2}
	a.Issued[0] = 1
	a.Tenure[0] = 1
	a.Belief[0][0] = belief{Held: true, LockIndex: 1, Tenure: 1}
	return a
}

func copyAbs(a *abs) *abs {
	c := *a
	c.NodeUp = append([]bool(nil), a.NodeUp...)
	c.ServiceUp = append([]bool(nil), a.ServiceUp...)
	c.QueryState = append([]string(nil), a.QueryState...)
	c.CheckStatus = append([]string(nil), a.CheckStatus...)
	c.SessState = append([]string(nil), a.SessState...)
	c.TTLLeft = append([]int(nil), a.TTLLeft...)
	c.KV = append([]kvRec(nil), a.KV...)
	c.Issued = append([]uint64(nil), a.Issued...)
	c.DelayLeft = append([]int(nil), a.DelayLeft...)
	c.Tenure = append([]uint64(nil), a.Tenure...)
	c.Fenced = append([]write(nil), a.Fenced...)
	c.Unfenced = append([]write(nil), a.Unfenced...)
	c.Belief = make([][]belief, len(a.Belief))
	for i := range a.Belief {
		c.Belief[i] = append([]belief(nil), a.Belief[i]...)
	}
	return &c
}

// TestInvariantsHoldOnGoodState: the base state passes every check, so the
// failures below are due to the one change each makes.
func TestInvariantsHoldOnGoodState(t *testing.T) {
	a := heldState(t)
	for name, inv := range invariants {
		if err := inv(a, 6); err != nil {
			t.Errorf("%s fails on a good state: %v", name, err)
		}
	}
	for name, p := range properties {
		if err := p(a, a); err != nil {
			t.Errorf("%s fails on a stutter: %v", name, err)
		}
	}
}

// TestEveryInvariantFails: each invariant rejects a state that breaks it.
func TestEveryInvariantFails(t *testing.T) {
	cases := map[string]func(a *abs){
		"TypeOK":          func(a *abs) { a.CheckStatus[0] = "flapping" },
		"MutualExclusion": func(a *abs) { a.Belief[1][0] = belief{Held: true, LockIndex: 1, Tenure: 1} },
		"HolderLive":      func(a *abs) { a.SessState[0] = sessDead },
		"LockIndexIssued": func(a *abs) { a.Issued[0] = 0 },
		"SequencerNeverReissued": func(a *abs) {
			a.Tenure[0] = 2 // k changed tenure, yet a's sequencer still matches
		},
		"LockDelayRespected":   func(a *abs) { a.DelayLeft[0] = 1 },
		"ModifyIndexBounded":   func(a *abs) { a.KV[0].ModifyIndex = 3 },
		"FencedNoStaleWrite":   func(a *abs) { a.Fenced[0] = write{Writer: "b", Stale: true} },
		"UnfencedNoStaleWrite": func(a *abs) { a.Unfenced[0] = write{Writer: "b", Stale: true} },
		"BeliefExclusive":      func(a *abs) { a.Belief[1][0] = belief{Held: true, LockIndex: 1} },
		"BoundChecksHealthy":   func(a *abs) { a.CheckStatus[0] = "critical" }, // h1, bound by live s1
		"QueryBoundLive": func(a *abs) {
			a.QueryState[0] = sessLive // q1, bound to s1
			a.SessState[0] = sessDead
		},
	}
	for name := range invariants {
		if cases[name] == nil {
			t.Errorf("invariant %s has no failing case here", name)
		}
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			a := copyAbs(heldState(t))
			mutate(a)
			if err := invariants[name](a, 6); err == nil {
				t.Fatalf("%s accepted a state that breaks it", name)
			}
		})
	}
}

// TestEveryPropertyFails: each action property rejects a step that breaks it.
func TestEveryPropertyFails(t *testing.T) {
	cases := map[string]struct {
		mutate func(next *abs)
		want   string
	}{
		"LockIndexMonotonic": {func(n *abs) { n.KV[0].LockIndex = 0 }, "LockIndex fell"},
		"InvalidationEffects": {func(n *abs) {
			n.SessState[0] = sessDead
			n.KV[0].Session = none
			// lock-delay not armed
		}, "lock-delay 0 ticks"},
	}
	for name := range properties {
		if _, ok := cases[name]; !ok {
			t.Errorf("property %s has no failing case here", name)
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prev := heldState(t)
			next := copyAbs(prev)
			tc.mutate(next)
			err := properties[name](prev, next)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s = %v, want an error containing %q", name, err, tc.want)
			}
		})
	}
	// The watermark falling is its own failure.
	prev := heldState(t)
	next := copyAbs(prev)
	next.Issued[0] = 0
	if err := lockIndexMonotonic(prev, next); err == nil || !strings.Contains(err.Error(), "watermark fell") {
		t.Fatalf("lockIndexMonotonic = %v, want the watermark's fall reported", err)
	}
}
