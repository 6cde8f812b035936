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
	for key, at := range a.s.Tombstones {
		if at > r.Index {
			continue
		}
		a.s.LockFloor = max(a.s.LockFloor, a.s.LockIssued[key])
		a.s.ReapedThrough = max(a.s.ReapedThrough, at)
		delete(a.s.Tombstones, key)
		delete(a.s.LockIssued, key)
		delete(a.s.DelayedAt, key)
	}
}
