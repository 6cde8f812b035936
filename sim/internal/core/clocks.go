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
	paused bool
	// held are the callbacks that fell due while paused, in the order they
	// did, each waiting for its channel to close.
	held []chan struct{}
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
		if !p.paused {
			p.mu.Unlock()
			f()
			return
		}
		ch := make(chan struct{})
		p.held = append(p.held, ch)
		p.mu.Unlock()
		<-ch
		f()
	})
}

func (p *pauseClock) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// resume releases the held callbacks in the order they fell due. With
// settle (the network's Settle), one at a time, each settled before the
// next: released together, they raced, and what the server wrote at its
// resume instant depended on which ran first. A crash passes nil: its
// callbacks belong to a server that is gone.
func (p *pauseClock) resume(settle func()) {
	p.mu.Lock()
	held := p.held
	p.held, p.paused = nil, false
	p.mu.Unlock()
	for _, ch := range held {
		close(ch)
		if settle != nil {
			settle()
		}
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
