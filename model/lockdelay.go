package model

import "time"

// LockDelays is one server's lock-delay memory (S22-S24). It lives beside the
// replicated state, not in it: Consul arms it on each server when that
// server applies an invalidation, using the server's own clock, and the
// leader consults it before proposing an acquire. It is pure: callers pass
// the time. The zero value is ready to use; it is not safe for concurrent use.
type LockDelays struct {
	until map[string]time.Time
}

// Arm starts (or extends) key's lock-delay: acquire is refused until now+d.
// d is capped at MaxLockDelay; d <= 0 arms nothing.
func (l *LockDelays) Arm(key string, now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	end := now.Add(min(d, MaxLockDelay))
	if l.until == nil {
		l.until = map[string]time.Time{}
	}
	if cur, ok := l.until[key]; !ok || end.After(cur) {
		l.until[key] = end
	}
}

// Remaining is how long key's lock-delay still runs at now; 0 if none.
func (l *LockDelays) Remaining(key string, now time.Time) time.Duration {
	end, ok := l.until[key]
	if !ok || !end.After(now) {
		return 0
	}
	return end.Sub(now)
}

// Blocks reports whether an acquire of key at now must be refused.
func (l *LockDelays) Blocks(key string, now time.Time) bool {
	return l.Remaining(key, now) > 0
}

// Prune forgets delays that have ended by now, bounding memory.
func (l *LockDelays) Prune(now time.Time) {
	for k, end := range l.until {
		if !end.After(now) {
			delete(l.until, k)
		}
	}
}

// Len is the number of keys with a recorded delay (ended ones included until Prune).
func (l *LockDelays) Len() int { return len(l.until) }

// Reset forgets everything, as a snapshot restore does in Consul.
func (l *LockDelays) Reset() { l.until = nil }
