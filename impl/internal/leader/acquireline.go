package leader

import (
	"context"
	"sync"
)

// acquireLine lets one stand-alone acquire of a key at a time go to the
// log. When a contended key is released, every waiter wakes, finds it free
// and proposes an acquire; one wins and the rest become entries that change
// nothing, each a commit on a majority. Waiting for the acquire already in
// flight instead lets the others see its outcome and be refused from the
// state, without entries (S29). Free keys, and acquires of different keys,
// never wait.
type acquireLine struct {
	mu       sync.Mutex
	inFlight map[string]chan struct{}
	waiters  int // blocked in wait (tests)
}

// take marks an acquire of key as in flight and returns its done, unless one
// already is.
func (q *acquireLine) take(key string) (done func(), ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, busy := q.inFlight[key]; busy {
		return nil, false
	}
	if q.inFlight == nil {
		q.inFlight = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	q.inFlight[key] = ch
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		delete(q.inFlight, key)
		close(ch)
	}, true
}

// wait returns once no acquire of key is in flight, or with ctx's error.
func (q *acquireLine) wait(ctx context.Context, key string) error {
	q.mu.Lock()
	ch := q.inFlight[key]
	if ch != nil {
		q.waiters++
	}
	q.mu.Unlock()
	if ch == nil {
		return nil
	}
	defer func() {
		q.mu.Lock()
		q.waiters--
		q.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// busy reports whether an acquire of key is in flight.
func (q *acquireLine) busy(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.inFlight[key]
	return ok
}

// waiting is how many acquires are blocked in wait (tests).
func (q *acquireLine) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiters
}
