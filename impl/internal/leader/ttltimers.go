package leader

import (
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// ttlTimers is the leader's TTL memory (S18-S21): a model.TTLDeadlines book
// driven by one Clock timer set at the earliest deadline. It is active only
// while this server leads; followers and deposed leaders keep nothing, as in
// Consul, so a deposed leader can never destroy a session.
type ttlTimers struct {
	clock      clock.Clock
	multiplier float64
	// expire is called from the timer's goroutine with the sessions whose
	// deadline passed, already taken out of the book. It must not block.
	expire func(ids []string)

	mu     sync.Mutex
	active bool
	book   model.TTLDeadlines
	timer  clock.Timer
	due    time.Time // when timer fires; zero when it is stopped
}

func newTTLTimers(clock clock.Clock, multiplier float64, expire func(ids []string)) *ttlTimers {
	return &ttlTimers{clock: clock, multiplier: multiplier, expire: expire}
}

// start activates the book with a fresh deadline for every TTL session: a
// new leader cannot know when a session was last renewed (S21). The session
// list is read under the book's lock, for the same reason as in reset.
func (t *ttlTimers) start(sessions func() []model.Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active = true
	t.book.Clear()
	now := t.clock.Now()
	for _, se := range sessions() {
		t.book.Reset(se.ID, now, se.TTLDuration(), t.multiplier)
	}
	t.rearmLocked()
}

// stop deactivates and empties the book (step-down, shutdown).
func (t *ttlTimers) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active = false
	t.book.Clear()
	t.rearmLocked()
}

// Reset (re)starts id's deadline after a create or renew, if this server
// leads and live(id) still holds. Checking liveness under the book's lock
// orders the reset against the FSM's removal of an invalidated session, so
// no stale deadline is left behind. A session without a TTL gets no
// deadline: model.TTLDeadlines.Reset decides that, here as everywhere.
func (t *ttlTimers) reset(id string, ttl time.Duration, live func(id string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.active || !live(id) {
		return
	}
	t.book.Reset(id, t.clock.Now(), ttl, t.multiplier)
	t.rearmLocked()
}

// remove forgets invalidated sessions.
func (t *ttlTimers) remove(ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.book.Remove(id)
	}
	t.rearmLocked()
}

// deadline reports id's deadline (tests).
func (t *ttlTimers) deadline(id string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.book.Deadline(id)
}

// fire takes every expired session out of the book and hands it to expire.
// A timer that fires late or early for a superseded deadline is harmless:
// only deadlines at or before now are acted on.
func (t *ttlTimers) fire() {
	t.mu.Lock()
	t.due = time.Time{}
	var expired []string
	if t.active {
		expired = t.book.Expired(t.clock.Now())
		for _, id := range expired {
			t.book.Remove(id)
		}
	}
	t.rearmLocked()
	t.mu.Unlock()
	if len(expired) > 0 {
		t.expire(expired)
	}
}

// rearmLocked points the single timer at the earliest deadline.
func (t *ttlTimers) rearmLocked() {
	next, ok := t.book.Next()
	if !t.active || !ok {
		if t.timer != nil {
			t.timer.Stop()
		}
		t.due = time.Time{}
		return
	}
	if next.Equal(t.due) {
		return
	}
	d := max(next.Sub(t.clock.Now()), 0)
	if t.timer == nil {
		t.timer = t.clock.AfterFunc(d, t.fire)
	} else {
		t.timer.Stop()
		t.timer.Reset(d)
	}
	t.due = next
}

// isActive reports whether the book runs (between start and stop).
func (t *ttlTimers) isActive() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active
}
