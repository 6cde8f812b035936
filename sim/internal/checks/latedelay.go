package checks

import "time"

// Lock-delay is armed by each server at its own apply of an invalidation,
// on its own clock (S22): a follower that applies it late (it was cut off or
// lagging) and then leads enforces it late, and a restarted server that
// replays the invalidation from its log re-arms it from the replay. The
// linearizability checker only knows the invalidation's window as the
// clients and the first apply saw it, so such a refusal looks like one with
// no delay behind it. lateRefusals finds the lock-delay refusals that only a
// late arming explains; History leaves them out (a refusal changes nothing,
// so dropping it never hides a state change), and they are counted.

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
				// Only the leader checks lock-delay (S22).
				if sa.at > op.RetAt || !ix.ledDuring(sa.server, op.CallAt, op.RetAt) {
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
