package simnet

import "time"

// deadline is a connection read or write deadline on bubble time. ch is closed
// once the deadline passes; setting a new deadline reuses ch while it is open,
// so a blocked reader waiting on ch sees every change. Guarded by n.mu.
type deadline struct {
	gen   uint64 // bumped on every set so a stale timer cannot expire a newer deadline
	timer *time.Timer
	ch    chan struct{}
}

func newDeadline() deadline { return deadline{ch: make(chan struct{})} }

func (d *deadline) expired() bool {
	select {
	case <-d.ch:
		return true
	default:
		return false
	}
}

// setLocked arms the deadline for t (zero clears it). Caller holds n.mu.
func (d *deadline) setLocked(n *Network, t time.Time) {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.expired() {
		d.ch = make(chan struct{})
	}
	if t.IsZero() {
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		close(d.ch)
		return
	}
	gen := d.gen
	d.timer = time.AfterFunc(wait, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if d.gen == gen && !d.expired() {
			close(d.ch)
		}
	})
}

func (d *deadline) stopLocked() {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}
