package recipes

import (
	"fmt"
	"math"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/recipe"
)

// RecipeBounds is the takeover bound and what it is made of.
type RecipeBounds struct {
	TTL           time.Duration `json:"ttl"`
	LockDelay     time.Duration `json:"lock_delay"`
	TTLMultiplier float64       `json:"ttl_multiplier"`
	// MinRate is the slowest server clock: server timers stretch by 1/MinRate.
	MinRate float64 `json:"min_rate"`
	// React is what the waiting recipe needs once the key is free: one
	// backoff step it may be sleeping in (recipe.DefaultRetryMax), plus
	// round trips, raft commits and the consistent read of the sequencer.
	React time.Duration `json:"react"`
	// Election is added when a server fault overlaps the window: a new raft
	// leader re-arms every TTL in full (S21) once it exists.
	Election time.Duration `json:"election"`
	// Takeover = (TTL×multiplier + LockDelay)/MinRate + React.
	Takeover time.Duration `json:"takeover"`
}

// deriveRecipeBounds derives the takeover bound. A dead holder's last renew
// reset its TTL no later than the death; the leader invalidates the session
// at most TTL×multiplier later on its clock (S19); the invalidation arms the
// lock-delay on that clock (S22); a waiting candidate's blocking query wakes
// on the release and, told the remaining delay (S25), sleeps exactly that
// and acquires.
func DeriveRecipeBounds(ttl, lockDelay time.Duration, minRate float64) RecipeBounds {
	b := RecipeBounds{TTL: ttl, LockDelay: lockDelay, TTLMultiplier: model.DefaultTTLMultiplier, MinRate: minRate,
		React: recipe.DefaultRetryMax + 2*time.Second, Election: 10 * time.Second}
	wait := time.Duration(math.Ceil((float64(ttl)*b.TTLMultiplier + float64(min(lockDelay, model.MaxLockDelay))) / minRate))
	b.Takeover = wait + b.React
	return b
}

// Settle is how long a run goes on after its last fault: a death just before
// it still gets its whole bound.
func (b RecipeBounds) Settle() time.Duration { return b.Election + b.Takeover + 5*time.Second }

func (b RecipeBounds) String() string {
	return fmt.Sprintf("(TTL %v × %v + lock-delay %v) / rate %.3f + react %v = %v (+ election %v after a server fault)",
		b.TTL, b.TTLMultiplier, b.LockDelay, b.MinRate, b.React, b.Takeover.Round(time.Millisecond), b.Election)
}

// slots is how many holders the recipe admits at once.
func (r *RecipeResult) Slots() int {
	if r.Config.Recipe == RecipeSemaphore {
		return r.Config.Limit
	}
	return 1
}
