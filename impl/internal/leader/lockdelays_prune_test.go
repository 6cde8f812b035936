package leader

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/model"
)

// TestLockDelayGuardStaysBounded pins the guard's memory bound: marks that
// have expired are pruned once the guard holds pruneMin of them (64 at
// first), so a leader that arms a delay on a new key every second, each
// over before the next, never holds 64 marks after an arm, however many
// keys it has seen; a live mark is never pruned; and after a burst of live
// marks the bound is twice what the last prune kept.
func TestLockDelayGuardStaysBounded(t *testing.T) {
	clock := clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := NewLockDelays(clock)
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		g.Arm([]model.LockDelay{{Key: key, Delay: 500 * time.Millisecond}})
		if n := g.delays.Len(); n >= 64 {
			t.Fatalf("after arming %d keys the guard holds %d marks, want fewer than 64", i+1, n)
		}
		if err := g.Check([]string{key}); err == nil {
			t.Fatalf("the mark just armed on %s is gone", key)
		}
		clock.Advance(time.Second)
	}
	// A burst of 100 live marks at once raises the threshold to twice
	// what a prune kept (200); once they have expired, steady arming stays
	// below it and pruning starts again.
	burst := make([]model.LockDelay, 100)
	for i := range burst {
		burst[i] = model.LockDelay{Key: fmt.Sprintf("burst%d", i), Delay: time.Second}
	}
	g.Arm(burst)
	clock.Advance(2 * time.Second)
	for i := range 1000 {
		g.Arm([]model.LockDelay{{Key: fmt.Sprintf("after%d", i), Delay: 500 * time.Millisecond}})
		if n := g.delays.Len(); n >= 200 {
			t.Fatalf("%d arms after the burst expired the guard holds %d marks, want fewer than 200", i+1, n)
		}
		clock.Advance(time.Second)
	}
}
