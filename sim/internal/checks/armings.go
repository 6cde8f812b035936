package checks

import (
	"time"
)

// arming is one invalidation that released or deleted a key held by a
// session with a positive lock-delay (S22).
type arming struct {
	key     string
	index   uint64 // the invalidation's raft index
	session string // the invalidated holder
	// holderLI is the holder's LockIndex: the key's watermark then, so the
	// next acquire of the key issues holderLI+1.
	holderLI uint64
	delay    time.Duration
	firstAt  time.Duration // when the cluster first applied it
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
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for kc, s := range o.goneHolders() {
			if s.EffectiveLockDelay() <= 0 {
				continue
			}
			// Each observation is one entry: a key whose holder it removed
			// was released or deleted by the invalidation itself, which arms
			// the key's lock-delay at this index (S22). A key left held is
			// the behaviour check's finding, not an arming.
			idx := o.Obs.Index
			if (kc.After != nil && kc.After.Session != "") || seen[ki{kc.Key, idx}] {
				continue
			}
			seen[ki{kc.Key, idx}] = true
			out = append(out, &arming{key: kc.Key, index: idx, session: s.ID, holderLI: kc.Before.LockIndex,
				delay: s.EffectiveLockDelay(), firstAt: first.at(idx)})
		}
	}
	return out
}

// crossing is one server observation with the range of raft indexes it
// applied: (lo, hi]. A restarted server's first observation starts from 0.
type crossing struct {
	server string
	at     time.Duration
	lo, hi uint64
	// proposer: the server applied hi as the leader of hi's own term, the
	// one that accepted and proposed it (not a later leader catching up).
	proposer bool
	replay   bool
}

// crossings lists every observation's applied range, in trace order.
func crossings(ix *traceIndex) []crossing {
	prev := map[serverInc]uint64{}
	var out []crossing
	for _, o := range ix.Obs {
		id := o.inc()
		lo := prev[id]
		prev[id] = max(lo, o.Obs.Index)
		if o.Obs.Index > lo {
			out = append(out, crossing{server: o.Server, at: o.At, lo: lo, hi: o.Obs.Index, proposer: o.Obs.Leader && o.Obs.LeaderTerm == o.Obs.Term, replay: o.Obs.Replay})
		}
	}
	return out
}

// serverArm is one server's own arming of a key: where its applied index
// passed the invalidation's, replays included. If a restarted server
// restored a snapshot, it armed less than this says.
type serverArm struct {
	server string
	at     time.Duration
	a      *arming
}

func serverArms(ix *traceIndex, arms []*arming) map[string][]serverArm {
	out := map[string][]serverArm{}
	for _, c := range crossings(ix) {
		for _, a := range arms {
			if a.index > c.lo && a.index <= c.hi {
				out[a.key] = append(out[a.key], serverArm{server: c.server, at: c.at, a: a})
			}
		}
	}
	return out
}
