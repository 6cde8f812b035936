package sim

import (
	"time"

	"github.com/tenurekv/tenure/model"
)

// Lock-delay is armed by each server at its own apply of an invalidation,
// on its own clock (S22): a follower that applies it late (it was cut off or
// lagging) and then leads enforces it late, and a restarted server that
// replays the invalidation from its log re-arms it from the replay. The
// linearizability checker only knows the invalidation's window as the
// clients and the first apply saw it, so such a refusal looks like one with
// no delay behind it. lateRefusals finds the lock-delay refusals that only a
// late arming explains; History leaves them out (a refusal changes nothing,
// so dropping it never hides a state change), and they are counted.

// arming is one invalidation that released or deleted a key held by a
// session with a positive lock-delay.
type arming struct {
	key     string
	index   uint64 // the invalidation's raft index
	delay   time.Duration
	firstAt time.Duration // when the cluster first applied it
}

// serverArm is one server's own arming of a key.
type serverArm struct {
	server string
	at     time.Duration
	a      *arming
}

// armings lists every invalidation that armed a lock-delay, from the
// servers' live (not replayed) applies, once per (key, index).
func armings(ix *traceIndex, first appliedTimes) []*arming {
	type ki struct {
		key   string
		index uint64
	}
	seen := map[ki]bool{}
	var out []*arming
	for _, o := range ix.obs {
		if o.Obs.Replay || len(o.Obs.GoneSess) == 0 {
			continue
		}
		gone := map[string]model.Session{}
		for _, s := range o.Obs.GoneSess {
			gone[s.ID] = s
		}
		for _, kc := range o.Obs.Keys {
			if kc.Before == nil || kc.Before.Session == "" {
				continue
			}
			s, ok := gone[kc.Before.Session]
			if !ok || s.EffectiveLockDelay() <= 0 {
				continue
			}
			// Only a release or delete made by the entry that last changed
			// the sessions table is the invalidation's own: a lagging
			// server may apply a client's release and a later destroy of
			// the holder together. (Some server applies it alone.)
			var idx uint64
			switch {
			case kc.After == nil:
				idx = kc.DeletedAt
			case kc.After.Session == "":
				idx = kc.After.ModifyIndex
			}
			if idx == 0 || idx != o.Obs.SessionsIndex || seen[ki{kc.Key, idx}] {
				continue
			}
			seen[ki{kc.Key, idx}] = true
			out = append(out, &arming{key: kc.Key, index: idx, delay: s.EffectiveLockDelay(), firstAt: first.at(idx)})
		}
	}
	return out
}

// serverArms places every arming on every server at the observation where
// that server's applied index passed it, replays included. A restarted
// server's first observation covers its whole log; if it restored a
// snapshot it armed less than this says, which only excuses more.
func serverArms(ix *traceIndex, arms []*arming) map[string][]serverArm {
	out := map[string][]serverArm{}
	type inc struct {
		server string
		n      int
	}
	prev := map[inc]uint64{}
	for _, o := range ix.obs {
		id := inc{o.Server, o.Obs.Incarnation}
		lo, hi := prev[id], o.Obs.Index
		prev[id] = max(lo, hi)
		for _, a := range arms {
			if a.index > lo && a.index <= hi {
				out[a.key] = append(out[a.key], serverArm{server: o.Server, at: o.At, a: a})
			}
		}
	}
	return out
}

// lateRefusals returns the ops (by Call.Op) refused for lock-delay that the
// checker's view cannot explain (no invalidation of the key first applied
// less than delay+slack before the call) but some server's own, later
// arming can: that server's clock had not yet run the delay out at the call
// or at the return.
func lateRefusals(ix *traceIndex, slack time.Duration) map[int]bool {
	first := firstApplies(ix)
	arms := armings(ix, first)
	onServers := serverArms(ix, arms)
	out := map[int]bool{}
	for _, op := range ix.ops {
		if !op.OK() || !op.Ret.LockDelay {
			continue
		}
		for _, key := range lockKeys(op.Call) {
			naive, late := false, false
			for _, a := range arms {
				if a.key == key && a.firstAt <= op.RetAt && op.CallAt < a.firstAt+a.delay+slack {
					naive = true
				}
			}
			for _, sa := range onServers[key] {
				if sa.at > op.RetAt {
					continue
				}
				if ix.serverElapsed(sa.server, sa.at, op.CallAt) < sa.a.delay ||
					ix.serverElapsed(sa.server, sa.at, op.RetAt) < sa.a.delay {
					late = true
				}
			}
			if !naive && late {
				out[op.Call.Op] = true
			}
		}
	}
	return out
}
