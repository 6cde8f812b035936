package leader

import (
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// LockDelays is this server's lock-delay memory (S22-S24): armed by the
// FSM when it applies an invalidation, consulted by the leader before it
// proposes an acquire. Both use this server's Clock, as Consul uses its own
// wall clock, so the delay is not replicated and a restore forgets it.
type LockDelays struct {
	clock clock.Clock

	mu       sync.Mutex
	delays   model.LockDelays
	pruneMin int // prune once Len reaches this, so pruning costs O(1) amortised
}

func NewLockDelays(clock clock.Clock) *LockDelays {
	return &LockDelays{clock: clock, pruneMin: 64}
}

// Arm starts the delays an applied command reported.
func (g *LockDelays) Arm(delays []model.LockDelay) {
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

// Check refuses the first of keys still under lock-delay.
func (g *LockDelays) Check(keys []string) error {
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

// Remaining reports key's remaining delay (for tests and diagnostics).
func (g *LockDelays) Remaining(key string) time.Duration {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.delays.Remaining(key, now)
}

// Reset forgets every delay, as Consul does on snapshot restore (CONSUL.md §4).
func (g *LockDelays) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.delays.Reset()
	g.pruneMin = 64
}
