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
	for key, at := range a.s.Tombstones {
		if at > r.Index {
			continue
		}
		a.s.LockFloor = max(a.s.LockFloor, a.s.LockIssued[key])
		a.s.ReapedThrough = max(a.s.ReapedThrough, at)
		delete(a.s.Tombstones, key)
		delete(a.s.LockIssued, key)
		delete(a.s.DelayedAt, key)
		reaped++
	}
	// A Go map keeps its buckets after its entries are deleted, so without
	// this a burst of deletions would hold its memory after the reap.
	if reaped > len(a.s.Tombstones) {
		a.s.Tombstones = compact(a.s.Tombstones)
		a.s.LockIssued = compact(a.s.LockIssued)
		a.s.DelayedAt = compact(a.s.DelayedAt)
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
