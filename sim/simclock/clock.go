// Package simclock provides per-node skewed clocks on top of the time package,
// meant to run inside a testing/synctest bubble so that "real" time is the
// bubble's virtual clock.
//
// A Clock has an offset and a rate (drift): after the bubble's clock advances
// by e, the node's clock advances by floor(e*rate). Timers convert a node-time
// duration d into a bubble timer of ceil(d/rate), which guarantees a timer never
// fires before d has elapsed on the node's own clock (and at most rate+1 ns
// after). The rate is held as an exact fraction with a 1e-9 resolution so both
// conversions use exact integer arithmetic rather than float rounding.
package simclock

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
)

// rateDen is the denominator of the rate fraction: rates are stored in parts
// per billion, so 0.8 and 1.2 are exact.
const rateDen = 1_000_000_000

// Bounds on the rate keep the 128-bit conversions meaningful and reject
// clocks that would stall (rate 0) or run backwards.
const (
	MinRate = 0.001
	MaxRate = 1000.0
)

// ErrBadRate is returned for a rate outside [MinRate, MaxRate] or not finite.
var ErrBadRate = errors.New("simclock: rate out of range")

// Clock is a server clock (clock.Clock) whose time is an affine function of the time
// package's clock (the bubble's virtual clock under synctest).
type Clock struct {
	mu    sync.Mutex
	start time.Time // bubble time at creation (with monotonic reading)
	base  time.Time // node time at creation, offset applied, wall-only
	num   uint64    // rate = num / rateDen
}

var _ clock.Clock = (*Clock)(nil)

// New returns a clock that reads bubble-now + offset now and advances at rate
// times the bubble's speed. Create it inside the bubble.
func New(offset time.Duration, rate float64) (*Clock, error) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < MinRate || rate > MaxRate {
		return nil, fmt.Errorf("%w: %v not in [%v, %v]", ErrBadRate, rate, MinRate, MaxRate)
	}
	now := time.Now()
	return &Clock{
		start: now,
		// Round(0) strips the monotonic reading: node times must behave like a
		// (possibly wrong) wall clock, never mix with the bubble's monotonic one.
		base: now.Round(0).Add(offset),
		num:  uint64(math.Round(rate * rateDen)),
	}, nil
}

// Rate returns the clock's rate as a float (exact to 1e-9).
func (c *Clock) Rate() float64 { return float64(c.num) / rateDen }

// Now returns the node's current time: base + offset + floor(rate*elapsed).
func (c *Clock) Now() time.Time {
	e := time.Since(c.start)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(c.NodeDuration(e))
}

// Offset returns how far the node's clock is ahead of the bubble's right now.
func (c *Clock) Offset() time.Duration {
	return c.Now().Sub(time.Now().Round(0))
}

// Step jumps the node's wall clock by d (as an NTP step would). Pending timers
// are unaffected: like Go's monotonic timers they measure elapsed durations.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = c.base.Add(d)
}

// NodeDuration converts a bubble duration to node time: floor(b*rate),
// saturating at the largest Duration. Negative b gives 0.
func (c *Clock) NodeDuration(b time.Duration) time.Duration {
	if b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(b), c.num)
	if hi >= rateDen {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, rateDen)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(q)
}

// BubbleDuration converts a node duration to the bubble duration after which
// at least d has passed on the node: ceil(d/rate), saturating. d <= 0 gives 0.
func (c *Clock) BubbleDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(d), rateDen)
	if hi >= c.num {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, c.num)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(q)
}

// AfterFunc calls f in its own goroutine once d has elapsed on this clock.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return &timer{c: c, t: time.AfterFunc(c.BubbleDuration(d), f)}
}

// timer adapts a bubble *time.Timer to node-time durations.
type timer struct {
	c *Clock
	t *time.Timer
}

// Stop reports, like (*time.Timer).Stop, whether it prevented the call.
func (t *timer) Stop() bool { return t.t.Stop() }

// Reset re-arms the timer for node-time d; like (*time.Timer).Reset it reports
// whether the timer had been active.
func (t *timer) Reset(d time.Duration) bool { return t.t.Reset(t.c.BubbleDuration(d)) }
