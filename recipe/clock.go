package recipe

import (
	"context"
	"time"
)

// Clock is the recipes' only source of time. It is deliberately smaller than
// the server's (impl/internal/clock) so that the client side does not import the server; adapting a
// server clock takes one line: func(d, f) func() bool { return c.AfterFunc(d, f).Stop }.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed on this
	// clock and returns a function that cancels it (true if it stopped f).
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// after returns a channel closed once d has elapsed on c, and its cancel.
func after(c Clock, d time.Duration) (<-chan struct{}, func() bool) {
	ch := make(chan struct{})
	stop := c.AfterFunc(d, func() { close(ch) })
	return ch, stop
}

// sleep waits d on c, or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	ch, stop := after(c, d)
	defer stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
