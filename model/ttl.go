package model

import (
	"slices"
	"time"
)

// DefaultTTLMultiplier is Consul's grace factor: a TTL session is invalidated
// TTL × multiplier after its last reset (S19).
const DefaultTTLMultiplier = 2

// TTLDeadlines is the leader's book of TTL session deadlines (S18-S21). It is
// leader memory, not replicated: a new leader rebuilds it from the session
// list with fresh deadlines. Pure: callers pass the time and drive one timer
// from Next. The zero value is ready; not safe for concurrent use.
type TTLDeadlines struct {
	deadline map[string]time.Time
}

// Reset (re)starts id's deadline at now + ttl × multiplier. A zero TTL removes
// it: sessions without TTL never expire.
func (t *TTLDeadlines) Reset(id string, now time.Time, ttl time.Duration, multiplier float64) {
	if ttl <= 0 {
		t.Remove(id)
		return
	}
	if t.deadline == nil {
		t.deadline = map[string]time.Time{}
	}
	t.deadline[id] = now.Add(time.Duration(float64(ttl) * multiplier))
}

// Remove forgets id (destroyed or invalidated by other means).
func (t *TTLDeadlines) Remove(id string) { delete(t.deadline, id) }

// Clear forgets everything (leader step-down).
func (t *TTLDeadlines) Clear() { t.deadline = nil }

// Deadline returns id's deadline.
func (t *TTLDeadlines) Deadline(id string) (time.Time, bool) {
	d, ok := t.deadline[id]
	return d, ok
}

// Expired lists, sorted, the sessions whose deadline is at or before now.
func (t *TTLDeadlines) Expired(now time.Time) []string {
	var out []string
	for id, d := range t.deadline {
		if !d.After(now) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Next is the earliest deadline, for arming a single timer.
func (t *TTLDeadlines) Next() (time.Time, bool) {
	var next time.Time
	for _, d := range t.deadline {
		if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// Len is the number of tracked sessions.
func (t *TTLDeadlines) Len() int { return len(t.deadline) }
