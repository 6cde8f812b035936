// Package clock is the server's only source of time, as an interface: the
// real server runs on System, the simulator on per-node skewed clocks on
// virtual time, and tests on clocktest.Manual.
package clock

import "time"

// Clock is the server's only source of time. The real server uses System;
// sim/ injects per-node skewed clocks on synctest virtual time, so TTL timers and
// lock-delay run on the node's own (possibly wrong) notion of time.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the handle AfterFunc returns; it mirrors *time.Timer.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// System is the wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (System) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
