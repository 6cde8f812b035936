package fsm

import (
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// guardEffects stands in for the leader's logic behind an FSM under test: a
// lock-delay guard of the test's, and the invalidated sessions handed to
// invalidated (which may be nil).
type guardEffects struct {
	*leader.LockDelays
	invalidated func(ids []string)
}

func (g guardEffects) ArmLockDelays(d []model.LockDelay) { g.Arm(d) }
func (g guardEffects) ForgetLockDelays()                 { g.Reset() }
func (g guardEffects) SessionsInvalidated(ids []string) {
	if g.invalidated != nil {
		g.invalidated(ids)
	}
}
