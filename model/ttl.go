package model

import (
	"container/heap"
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
//
// Deadlines sit in a min-heap indexed by session, so a renew, a removal and
// re-arming the timer cost O(log n) rather than a scan of every session:
// with 10,000 TTL sessions each renew would otherwise visit all of them.
type TTLDeadlines struct {
	at   map[string]*ttlEntry
	heap ttlHeap
}

type ttlEntry struct {
	id       string
	deadline time.Time
	pos      int // index in heap
}

// ttlHeap orders entries by deadline. Ties need no order: Expired sorts
// what it returns and Next returns only the time.
type ttlHeap []*ttlEntry

func (h ttlHeap) Len() int           { return len(h) }
func (h ttlHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h ttlHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *ttlHeap) Push(x any) {
	e := x.(*ttlEntry)
	e.pos = len(*h)
	*h = append(*h, e)
}
func (h *ttlHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// Reset (re)starts id's deadline at now + ttl × multiplier. A zero TTL removes
// it: sessions without TTL never expire.
func (t *TTLDeadlines) Reset(id string, now time.Time, ttl time.Duration, multiplier float64) {
	if ttl <= 0 {
		t.Remove(id)
		return
	}
	deadline := now.Add(time.Duration(float64(ttl) * multiplier))
	if e, ok := t.at[id]; ok {
		e.deadline = deadline
		heap.Fix(&t.heap, e.pos)
		return
	}
	if t.at == nil {
		t.at = map[string]*ttlEntry{}
	}
	e := &ttlEntry{id: id, deadline: deadline}
	t.at[id] = e
	heap.Push(&t.heap, e)
}

// Remove forgets id (destroyed or invalidated by other means).
func (t *TTLDeadlines) Remove(id string) {
	if e, ok := t.at[id]; ok {
		heap.Remove(&t.heap, e.pos)
		delete(t.at, id)
	}
}

// Clear forgets everything (leader step-down).
func (t *TTLDeadlines) Clear() { t.at, t.heap = nil, nil }

// Deadline returns id's deadline.
func (t *TTLDeadlines) Deadline(id string) (time.Time, bool) {
	if e, ok := t.at[id]; ok {
		return e.deadline, true
	}
	return time.Time{}, false
}

// Expired lists, sorted, the sessions whose deadline is at or before now.
func (t *TTLDeadlines) Expired(now time.Time) []string {
	var out []string
	t.due(now, 0, func(e *ttlEntry) { out = append(out, e.id) })
	slices.Sort(out)
	return out
}

// due calls fn for every entry with a deadline at or before now, walking
// only the part of the heap that is due (a child is never due before its
// parent).
func (t *TTLDeadlines) due(now time.Time, i int, fn func(*ttlEntry)) {
	if i >= len(t.heap) || t.heap[i].deadline.After(now) {
		return
	}
	fn(t.heap[i])
	t.due(now, 2*i+1, fn)
	t.due(now, 2*i+2, fn)
}

// Next is the earliest deadline, for arming a single timer.
func (t *TTLDeadlines) Next() (time.Time, bool) {
	if len(t.heap) == 0 {
		return time.Time{}, false
	}
	return t.heap[0].deadline, true
}

// Len is the number of tracked sessions.
func (t *TTLDeadlines) Len() int { return len(t.at) }
