package impl

import (
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// lockDelayGuard is this server's lock-delay memory (S22-S24): armed by the
// FSM when it applies an invalidation, consulted by the leader before it
// proposes an acquire. Both use this server's Clock, as Consul uses its own
// wall clock, so the delay is not replicated and a restore forgets it.
type lockDelayGuard struct {
	clock clock.Clock

	mu       sync.Mutex
	delays   model.LockDelays
	pruneMin int // prune once Len reaches this, so pruning costs O(1) amortised
}

func newLockDelayGuard(clock clock.Clock) *lockDelayGuard {
	return &lockDelayGuard{clock: clock, pruneMin: 64}
}

// arm starts the delays an applied command reported.
func (g *lockDelayGuard) arm(delays []model.LockDelay) {
	if len(delays) == 0 {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, d := range delays {
		g.delays.Arm(d.Key, now, d.Delay)
	}
	if g.delays.Len() >= g.pruneMin {
		g.delays.Prune(now)
		g.pruneMin = max(64, 2*g.delays.Len())
	}
}

// check refuses the first of keys still under lock-delay.
func (g *lockDelayGuard) check(keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range keys {
		if rem := g.delays.Remaining(k, now); rem > 0 {
			return &LockDelayError{Key: k, Remaining: rem}
		}
	}
	return nil
}

// remaining reports key's remaining delay (for tests and diagnostics).
func (g *lockDelayGuard) remaining(key string) time.Duration {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.delays.Remaining(key, now)
}

// reset forgets every delay, as Consul does on snapshot restore (CONSUL.md §4).
func (g *lockDelayGuard) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.delays.Reset()
	g.pruneMin = 64
}
