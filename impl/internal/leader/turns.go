package leader

import (
	"sync"
	"time"
)

// turns orders the acquires of a contended key that wait at the leader
// together. When the key frees, every waiter wakes at once and the first
// goroutine the scheduler runs would take it, so which session got the key
// was a draw, again at every hand-off, and a client could lose any number
// of them in a row while others cycled (issue 37). Instead a session that
// has waited for the key longer goes first: an acquire that finds the key
// free while a session that has waited longer is at the leader defers to
// it for at most turnYield. A session's standing begins when one of its
// acquires finds the key held or loses it to another, survives its
// refusals (a spinning client's next attempt keeps its place), and ends
// when it takes the key or has not been seen for turnForget.
//
// Only which of two proposals goes first changes: what each answers is
// still decided by the state (S29), so this is leader memory, lost with
// the leadership like the acquire line.
type turns struct {
	mu        sync.Mutex
	keys      map[string]*keyTurns
	lastSweep time.Time
}

const (
	// turnYield bounds how long an acquire defers to a senior waiter at
	// the leader, which takes the key at once unless its own request
	// ends first.
	turnYield = time.Millisecond
	// turnForget is how long a session's standing outlives its last
	// acquire of the key.
	turnForget = time.Second
	// turnCap bounds the sessions with a standing per key; past it a
	// newcomer waits without one.
	turnCap = 4096
)

type keyTurns struct {
	standing map[string]*standing // session → since when it waits
	present  map[*turn]struct{}   // acquires of the key at the leader now
	// moved is closed, and replaced, when an acquire of the key goes to
	// the log or leaves the leader: what a deferring waiter waits for.
	moved chan struct{}
}

type standing struct{ since, seen time.Time }

// turn is one acquire's presence at the leader.
type turn struct {
	key, session string
}

// enter notes an acquire of key by session as present.
func (t *turns) enter(key, session string) *turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if now.Sub(t.lastSweep) > turnForget {
		t.sweep(now)
	}
	if t.keys == nil {
		t.keys = map[string]*keyTurns{}
	}
	k := t.keys[key]
	if k == nil {
		k = &keyTurns{standing: map[string]*standing{}, present: map[*turn]struct{}{}, moved: make(chan struct{})}
		t.keys[key] = k
	}
	tn := &turn{key: key, session: session}
	k.present[tn] = struct{}{}
	if s := k.standing[session]; s != nil {
		s.seen = now
	}
	t.move(k) // a senior arriving ends a junior's deferral
	return tn
}

// leave notes that tn's acquire has been answered.
func (t *turns) leave(tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.keys[tn.key]
	if k == nil {
		return
	}
	delete(k.present, tn)
	if s := k.standing[tn.session]; s != nil {
		s.seen = time.Now()
	}
	t.move(k)
	if len(k.present) == 0 && len(k.standing) == 0 {
		delete(t.keys, tn.key)
	}
}

// waiting starts tn's session's standing unless it has one.
func (t *turns) waiting(tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.keys[tn.key]
	if k == nil || k.standing[tn.session] != nil || len(k.standing) >= turnCap {
		return
	}
	now := time.Now()
	k.standing[tn.session] = &standing{since: now, seen: now}
}

// took notes that tn's acquire goes to the log: the waiters deferring to
// it look again.
func (t *turns) took(tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := t.keys[tn.key]; k != nil {
		t.move(k)
	}
}

// acquired ends tn's session's standing: it holds the key.
func (t *turns) acquired(tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := t.keys[tn.key]; k != nil {
		delete(k.standing, tn.session)
	}
}

// outranked reports whether a session at the leader now has waited for
// tn's key longer than tn's, and a channel closed when that may change. A
// senior that is away (a spinning client between two attempts, a
// consul/api Lock waiter in its blocking read) is not waited for: holding a
// free key for it cost Lock waiters more refusals than it won them, each
// able to send one into consul/api's 5 s retry sleep (measured side by
// side, bench/results/2026-11-29-tail-latency.md).
func (t *turns) outranked(tn *turn) (<-chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.keys[tn.key]
	if k == nil {
		return nil, false
	}
	mine := k.standing[tn.session]
	for o := range k.present {
		s := k.standing[o.session]
		if o.session != tn.session && s != nil && (mine == nil || s.since.Before(mine.since)) {
			return k.moved, true
		}
	}
	return nil, false
}

// move wakes the waiters deferring on k; t.mu is held.
func (t *turns) move(k *keyTurns) {
	close(k.moved)
	k.moved = make(chan struct{})
}

// sweep drops the standings not seen for turnForget and the keys left
// with nothing; t.mu is held.
func (t *turns) sweep(now time.Time) {
	t.lastSweep = now
	for key, k := range t.keys {
		present := map[string]bool{}
		for o := range k.present {
			present[o.session] = true
		}
		for s, st := range k.standing {
			if !present[s] && now.Sub(st.seen) > turnForget {
				delete(k.standing, s)
			}
		}
		if len(k.present) == 0 && len(k.standing) == 0 {
			delete(t.keys, key)
		}
	}
}
