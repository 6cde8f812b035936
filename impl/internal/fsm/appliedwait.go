package fsm

import (
	"sync"
	"time"
)

// appliedWaits lets callers wait until the state machine has applied a raft
// index. Waiters for the same index share one channel, so the map holds at
// most one entry per index still ahead of the state machine, however many
// callers wait or give up.
type appliedWaits struct {
	mu    sync.Mutex
	index uint64    // the last index applied
	at    time.Time // when index was applied (zero: never)
	waits map[uint64]chan struct{}
}

// reachedCh is the channel handed out for an index already applied.
var reachedCh = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// reached returns a channel closed once index has been applied.
func (a *appliedWaits) reached(index uint64) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.index {
		return reachedCh
	}
	if a.waits == nil {
		a.waits = map[uint64]chan struct{}{}
	}
	ch, ok := a.waits[index]
	if !ok {
		ch = make(chan struct{})
		a.waits[index] = ch
	}
	return ch
}

// advance records that every index up to index has been applied and wakes
// their waiters. An index at or below the last one changes nothing.
func (a *appliedWaits) advance(index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.index {
		return
	}
	a.index, a.at = index, time.Now()
	for i, ch := range a.waits {
		if i <= index {
			close(ch)
			delete(a.waits, i)
		}
	}
}

// sinceAdvance is how long ago the last index was applied; a very long
// time if none was.
func (a *appliedWaits) sinceAdvance() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.at.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return time.Since(a.at)
}

// pending is how many indexes have waiters (tests).
func (a *appliedWaits) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waits)
}
