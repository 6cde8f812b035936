package core

import (
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
)

// pauseClock is the Clock a server is given: its node's skewed clock, plus a
// gate that holds timer callbacks while the server is paused (a stopped
// process fires no timers; on resume the overdue ones fire at once). raft's
// own timers cannot be gated: raft uses the time package, which is the
// bubble's clock; only the server's network is frozen for raft.
type pauseClock struct {
	inner clock.Clock
	// now, if set, replaces inner.Now for a broken-server variant.
	now func() time.Time

	mu     sync.Mutex
	paused chan struct{} // non-nil while paused; closed on resume
}

func (p *pauseClock) Now() time.Time {
	if p.now != nil {
		return p.now()
	}
	return p.inner.Now()
}

func (p *pauseClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return p.inner.AfterFunc(d, func() {
		p.mu.Lock()
		ch := p.paused
		p.mu.Unlock()
		if ch != nil {
			<-ch
		}
		f()
	})
}

func (p *pauseClock) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *pauseClock) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

// clientClock is a client's notion of time. Unlike a server clock its rate
// can change mid-run (the client-clock-rate fault), which is what makes a client's
// estimate of its TTL wrong.
type ClientClock struct {
	Mu       sync.Mutex
	bubble0  time.Time // bubble time at the last rate change
	node0    time.Time // client time then
	Rate     float64
	baseRate float64
}

func NewClientClock(offset time.Duration, rate float64) *ClientClock {
	now := time.Now()
	return &ClientClock{bubble0: now, node0: now.Round(0).Add(offset), Rate: rate, baseRate: rate}
}

func (c *ClientClock) Now() time.Time {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.nowLocked()
}

func (c *ClientClock) nowLocked() time.Time {
	e := time.Since(c.bubble0)
	return c.node0.Add(time.Duration(float64(e) * c.Rate))
}

// setRate changes the rate from now on; 0 restores the base rate.
func (c *ClientClock) SetRate(r float64) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	c.node0 = c.nowLocked()
	c.bubble0 = time.Now()
	if r == 0 {
		r = c.baseRate
	}
	c.Rate = r
}

// sleep waits d of the client's own time (rounded up in bubble time).
func (c *ClientClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	c.Mu.Lock()
	r := c.Rate
	c.Mu.Unlock()
	time.Sleep(time.Duration(float64(d)/r) + 1)
}
