package impl

import (
	"sync"
	"time"
)

// failureDetector stands in for Consul's gossip failure detection. tenure
// has no gossip layer, but the leader already probes every server with raft
// heartbeats: when heartbeats to a peer have failed continuously for the
// threshold, the leader marks the peer's serfHealth critical, which
// invalidates its sessions through the ordinary check path (S12, S48). When
// heartbeats resume, the peer is marked passing again.
//
// Only the leader runs it, and only while it leads: raft emits heartbeat
// observations on the leader only, and a new leader starts from a clean slate
// (a peer dead before the election is noticed after one threshold).
type failureDetector struct {
	clock     Clock
	threshold time.Duration
	// critical and passing are called from timer or observer goroutines and
	// must not block; they start the raft writes themselves.
	critical func(peer string)
	passing  func(peer string)

	mu      sync.Mutex
	active  bool
	failing map[string]*peerFailure
}

type peerFailure struct {
	timer  Timer
	marked bool // critical has been called for this failure episode
}

func newFailureDetector(clock Clock, threshold time.Duration, critical, passing func(peer string)) *failureDetector {
	return &failureDetector{clock: clock, threshold: threshold, critical: critical, passing: passing}
}

// start begins watching (this server became leader and is ready).
func (d *failureDetector) start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active = true
	d.failing = map[string]*peerFailure{}
}

// stop forgets every episode (step-down, shutdown).
func (d *failureDetector) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active = false
	for _, f := range d.failing {
		f.timer.Stop()
	}
	d.failing = nil
}

// heartbeatFailed records a failed heartbeat; the first of an episode arms
// the threshold timer.
func (d *failureDetector) heartbeatFailed(peer string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.active {
		return
	}
	if _, ok := d.failing[peer]; ok {
		return
	}
	f := &peerFailure{}
	f.timer = d.clock.AfterFunc(d.threshold, func() { d.expired(peer, f) })
	d.failing[peer] = f
}

// heartbeatResumed ends the peer's episode; if it had been marked critical,
// it is marked passing again.
func (d *failureDetector) heartbeatResumed(peer string) {
	d.mu.Lock()
	f, ok := d.failing[peer]
	if ok {
		f.timer.Stop()
		delete(d.failing, peer)
	}
	active := d.active
	d.mu.Unlock()
	if ok && f.marked && active {
		d.passing(peer)
	}
}

func (d *failureDetector) expired(peer string, f *peerFailure) {
	d.mu.Lock()
	current := d.active && d.failing[peer] == f
	if current {
		f.marked = true
	}
	d.mu.Unlock()
	if current {
		d.critical(peer)
	}
}

// isFailing reports whether peer is in a failure episode that has reached the
// threshold, so that a retried critical write can stop once the peer is back.
func (d *failureDetector) isFailing(peer string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.failing[peer]
	return d.active && ok && f.marked
}
