package leader

import (
	"errors"
	"fmt"
	"time"
)

// LockDelayError says an acquire was refused because the key is in its
// lock-delay (S22, S25).
type LockDelayError struct {
	Key       string
	Remaining time.Duration
}

func (e *LockDelayError) Error() string {
	return fmt.Sprintf("failed to lock key %q due to lock delay", e.Key)
}

// ErrSessionNotFound is Renew's answer for an unknown or expired session.
var ErrSessionNotFound = errors.New("session not found")
