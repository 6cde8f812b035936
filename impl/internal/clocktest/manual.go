// Package clocktest is a clock for tests: Manual moves only when the test
// advances it.
package clocktest

import (
	"slices"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
)

// Manual is a clock.Clock that moves only when Advance is called, so a
// test decides exactly when blocking-query waits, TTLs and lock-delays end.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManual starts at start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f in its own goroutine once Advance has moved the clock d past now.
func (c *Manual) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, f: f, at: c.now.Add(d), active: true}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and fires, in deadline order, every timer due.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualTimer
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			due = append(due, t)
		}
	}
	c.compact()
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		go t.f()
	}
}

// Pending is the number of armed timers; tests poll it to learn that a
// blocking read has started waiting.
func (c *Manual) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.active {
			n++
		}
	}
	return n
}

// compact drops stopped and fired timers; c.mu is held.
func (c *Manual) compact() {
	c.timers = slices.DeleteFunc(c.timers, func(t *manualTimer) bool { return !t.active })
}

type manualTimer struct {
	c      *Manual
	f      func()
	at     time.Time
	active bool
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	t.c.compact()
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at = t.c.now.Add(d)
	if !was {
		t.active = true
		t.c.timers = append(t.c.timers, t)
	}
	return was
}
