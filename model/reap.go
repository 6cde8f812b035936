package model

// reap applies a Reap (S52). Reaping only ever removes records of keys that
// do not exist, and it raises LockFloor to every watermark it drops, so the
// next holder of a re-created key still gets a LockIndex above every one
// issued for that key before.
func (a *applier) reap(r Reap) {
	if r.Index >= a.idx {
		a.fail(errorf(ErrInvalid, "reap index %d is not below the entry's own index %d", r.Index, a.idx))
		return
	}
	reaped := 0
	for key, at := range a.s.tombstones {
		if at > r.Index {
			continue
		}
		a.s.lockFloor = max(a.s.lockFloor, a.s.lockIssued[key])
		a.s.reapedThrough = max(a.s.reapedThrough, at)
		delete(a.s.tombstones, key)
		delete(a.s.lockIssued, key)
		delete(a.s.delayedAt, key)
		reaped++
	}
	// A Go map keeps its buckets after its entries are deleted, so without
	// this a burst of deletions would hold its memory after the reap.
	if reaped > len(a.s.tombstones) {
		a.s.tombstones = compact(a.s.tombstones)
		a.s.lockIssued = compact(a.s.lockIssued)
		a.s.delayedAt = compact(a.s.delayedAt)
	}
}

// compact copies m into a map sized for its current entries.
func compact[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
