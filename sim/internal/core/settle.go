package core

import "testing/synctest"

// settler settles the bubble at one virtual instant (synctest.Wait) for one
// caller at a time: synctest panics when two goroutines Wait at once, and
// two faults may heal at one instant. The token is a channel, not a
// sync.Mutex, because a goroutine parked on a channel counts as durably
// blocked and one parked on a Mutex does not (the other caller's Wait would
// never return). Create it inside the bubble.
type settler struct{ tok chan struct{} }

func newSettler() *settler { return &settler{tok: make(chan struct{}, 1)} }

// Settle returns once every other goroutine of the bubble is durably
// blocked: whatever the caller's last step set going at this instant has
// happened.
func (s *settler) Settle() {
	s.tok <- struct{}{}
	defer func() { <-s.tok }()
	synctest.Wait()
}
