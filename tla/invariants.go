package tla

import (
	"fmt"
	"slices"

	"github.com/tenurekv/tenure/model"
)

// invariant is the Go counterpart of a state predicate of Sessions.tla; it
// returns nil when the predicate holds and says why when it does not.
type invariant func(a *abs, maxIndex uint64) error

// property is the Go counterpart of an action property [][A]_vars, checked
// on every step prev → next.
type property func(prev, next *abs) error

// invariants are Sessions.tla's state predicates, by name.
var invariants = map[string]invariant{
	"TypeOK":                 typeOK,
	"MutualExclusion":        mutualExclusion,
	"HolderLive":             holderLive,
	"LockIndexIssued":        lockIndexIssued,
	"SequencerNeverReissued": sequencerNeverReissued,
	"LockDelayRespected":     lockDelayRespected,
	"ModifyIndexBounded":     modifyIndexBounded,
	"FencedNoStaleWrite":     fencedNoStaleWrite,
	"BoundChecksHealthy":     boundChecksHealthy,
	"QueryBoundLive":         queryBoundLive,
	"BeliefExclusive":        beliefExclusive,
	"UnfencedNoStaleWrite":   unfencedNoStaleWrite,
}

// properties are Sessions.tla's action properties, by name.
var properties = map[string]property{
	"LockIndexMonotonic":  lockIndexMonotonic,
	"InvalidationEffects": invalidationEffects,
}

func typeOK(a *abs, maxIndex uint64) error {
	sc := a.sc
	if a.Index > maxIndex {
		return fmt.Errorf("index %d above MaxIndex %d", a.Index, maxIndex)
	}
	for i, st := range a.CheckStatus {
		if st != checkGone && !model.Health(st).Valid() {
			return fmt.Errorf("check %s has status %q", sc.Checks[i], st)
		}
	}
	for i, st := range a.SessState {
		if st != sessUnborn && st != sessLive && st != sessDead {
			return fmt.Errorf("session %s in state %q", sc.Sessions[i], st)
		}
	}
	for i, st := range a.QueryState {
		if st != sessUnborn && st != sessLive && st != sessDead {
			return fmt.Errorf("query %s in state %q", sc.Queries[i], st)
		}
	}
	for i, e := range a.KV {
		if e.Session != none && !slices.Contains(sc.Sessions, e.Session) {
			return fmt.Errorf("key %s held by unknown session %q", sc.Keys[i], e.Session)
		}
		for _, w := range []write{a.Fenced[i], a.Unfenced[i]} {
			if w.Writer != none && !slices.Contains(sc.Clients, w.Writer) {
				return fmt.Errorf("key %s written by unknown client %q", sc.Keys[i], w.Writer)
			}
		}
	}
	return nil
}

func mutualExclusion(a *abs, _ uint64) error {
	sc := a.sc
	for k := range sc.Keys {
		for c1 := range sc.Clients {
			for c2 := range sc.Clients {
				if a.legit(c1, k) && a.legit(c2, k) && sc.ClientSession[sc.Clients[c1]] != sc.ClientSession[sc.Clients[c2]] {
					return fmt.Errorf("key %s: clients %s and %s of different sessions both hold its current tenure",
						sc.Keys[k], sc.Clients[c1], sc.Clients[c2])
				}
			}
		}
	}
	return nil
}

func holderLive(a *abs, _ uint64) error {
	for k, e := range a.KV {
		if !a.held(k) {
			continue
		}
		i := slices.Index(a.sc.Sessions, e.Session)
		if i < 0 || a.SessState[i] != sessLive {
			return fmt.Errorf("key %s held by session %s, which is not live", a.sc.Keys[k], e.Session)
		}
	}
	return nil
}

func lockIndexIssued(a *abs, _ uint64) error {
	for k, e := range a.KV {
		switch {
		case !e.Exists:
		case e.LockIndex > a.Issued[k]:
			return fmt.Errorf("key %s has LockIndex %d above the watermark %d", a.sc.Keys[k], e.LockIndex, a.Issued[k])
		case e.Session != none && e.LockIndex < 1:
			return fmt.Errorf("key %s is held with LockIndex 0", a.sc.Keys[k])
		}
	}
	return nil
}

func sequencerNeverReissued(a *abs, _ uint64) error {
	sc := a.sc
	for k := range sc.Keys {
		for c1 := range sc.Clients {
			b1 := a.Belief[c1][k]
			if a.seqValid(c1, k) && b1.Tenure != a.Tenure[k] {
				return fmt.Errorf("key %s: client %s's sequencer (LockIndex %d) from tenure %d is valid in tenure %d",
					sc.Keys[k], sc.Clients[c1], b1.LockIndex, b1.Tenure, a.Tenure[k])
			}
			for c2 := range sc.Clients {
				b2 := a.Belief[c2][k]
				if b1.Held && b2.Held && sc.ClientSession[sc.Clients[c1]] == sc.ClientSession[sc.Clients[c2]] &&
					b1.LockIndex == b2.LockIndex && b1.Tenure != b2.Tenure {
					return fmt.Errorf("key %s: sequencer (LockIndex %d, session %s) issued in tenures %d and %d",
						sc.Keys[k], b1.LockIndex, sc.ClientSession[sc.Clients[c1]], b1.Tenure, b2.Tenure)
				}
			}
		}
	}
	return nil
}

func lockDelayRespected(a *abs, _ uint64) error {
	for k := range a.KV {
		if a.DelayLeft[k] > 0 && a.held(k) {
			return fmt.Errorf("key %s held by %s with %d ticks of lock-delay left", a.sc.Keys[k], a.KV[k].Session, a.DelayLeft[k])
		}
	}
	return nil
}

func modifyIndexBounded(a *abs, _ uint64) error {
	for k, e := range a.KV {
		if e.Exists && (e.ModifyIndex < 1 || e.ModifyIndex > a.Index) {
			return fmt.Errorf("key %s has ModifyIndex %d outside 1..%d", a.sc.Keys[k], e.ModifyIndex, a.Index)
		}
	}
	return nil
}

func staleWrite(a *abs, ws []write, resource string) error {
	for k, w := range ws {
		if w.Stale {
			return fmt.Errorf("the %s resource accepted a write to %s from %s, which does not hold it", resource, a.sc.Keys[k], w.Writer)
		}
	}
	return nil
}

func fencedNoStaleWrite(a *abs, _ uint64) error { return staleWrite(a, a.Fenced, "fenced") }

func unfencedNoStaleWrite(a *abs, _ uint64) error { return staleWrite(a, a.Unfenced, "unfenced") }

func beliefExclusive(a *abs, _ uint64) error {
	sc := a.sc
	for k := range sc.Keys {
		for c1 := range sc.Clients {
			for c2 := range sc.Clients {
				if a.Belief[c1][k].Held && a.Belief[c2][k].Held && sc.ClientSession[sc.Clients[c1]] != sc.ClientSession[sc.Clients[c2]] {
					return fmt.Errorf("key %s: clients %s and %s of different sessions both believe they hold it", sc.Keys[k], sc.Clients[c1], sc.Clients[c2])
				}
			}
		}
	}
	return nil
}

func lockIndexMonotonic(prev, next *abs) error {
	if next.Floor < prev.Floor {
		return fmt.Errorf("lock floor fell from %d to %d", prev.Floor, next.Floor)
	}
	for k := range prev.KV {
		reaped := !prev.KV[k].Exists && next.Issued[k] == 0 && next.Floor >= prev.Issued[k]
		if next.Issued[k] < prev.Issued[k] && !reaped {
			return fmt.Errorf("key %s: watermark fell from %d to %d", prev.sc.Keys[k], prev.Issued[k], next.Issued[k])
		}
		if prev.KV[k].Exists && next.KV[k].Exists && next.KV[k].LockIndex < prev.KV[k].LockIndex {
			return fmt.Errorf("key %s: LockIndex fell from %d to %d", prev.sc.Keys[k], prev.KV[k].LockIndex, next.KV[k].LockIndex)
		}
	}
	return nil
}

func invalidationEffects(prev, next *abs) error {
	sc := prev.sc
	for k, e := range prev.KV {
		if !prev.held(k) {
			continue
		}
		s := slices.Index(sc.Sessions, e.Session)
		if s < 0 || next.SessState[s] != sessDead {
			continue
		}
		key, ne := sc.Keys[k], next.KV[k]
		if sc.SessionBehavior[e.Session] == model.BehaviorDelete {
			if ne.Exists {
				return fmt.Errorf("key %s outlives its delete-behaviour session %s", key, e.Session)
			}
		} else if !ne.Exists || ne.Session != none || ne.LockIndex != e.LockIndex {
			return fmt.Errorf("key %s not released in place when release-behaviour session %s died: %+v", key, e.Session, ne)
		}
		if next.DelayLeft[k] < sc.SessionDelay[e.Session] {
			return fmt.Errorf("key %s: lock-delay %d ticks after session %s died, want >= %d", key, next.DelayLeft[k], e.Session, sc.SessionDelay[e.Session])
		}
	}
	return nil
}

// queryBoundLive: a live prepared query's session is live; invalidation
// deletes the session's queries in its own step (S58).
func queryBoundLive(a *abs, _ uint64) error {
	sc := a.sc
	for i, q := range sc.Queries {
		if a.QueryState[i] != sessLive {
			continue
		}
		s := slices.Index(sc.Sessions, sc.QuerySession[q])
		if s < 0 || a.SessState[s] != sessLive {
			return fmt.Errorf("query %s is live but its session %s is not", q, sc.QuerySession[q])
		}
	}
	return nil
}

// boundChecksHealthy: a live session's bound checks, node or service ones,
// are registered and not critical (S56).
func boundChecksHealthy(a *abs, _ uint64) error {
	sc := a.sc
	for i, s := range sc.Sessions {
		if a.SessState[i] != sessLive {
			continue
		}
		for _, ch := range sc.SessionChecks[s] {
			st := a.CheckStatus[slices.Index(sc.Checks, ch)]
			if st != string(model.HealthPassing) && st != string(model.HealthWarning) {
				return fmt.Errorf("session %s is live but its check %s is %s", s, ch, st)
			}
		}
	}
	return nil
}
