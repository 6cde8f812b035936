package recipe

import "errors"

// Why a Hold or Slot was lost (Err after Lost is closed), and the recipes'
// refusals. Use errors.Is: the returned errors wrap these with detail.
var (
	// ErrSessionGone: the session no longer exists (renew answered 404, or
	// the monitor saw the key leave the session).
	ErrSessionGone = errors.New("recipe: session invalidated")
	// ErrRenewTimeout: no renewal sent in the last TTL succeeded, so the
	// server may already have invalidated the session (S18, S19).
	ErrRenewTimeout = errors.New("recipe: no successful session renewal within one TTL")
	// ErrHolderChanged: the key is missing or held by another session.
	ErrHolderChanged = errors.New("recipe: key's holder changed")
	// ErrReleased: the holder released it (Release was called).
	ErrReleased = errors.New("recipe: released")
	// ErrConflict: the key exists with flags of another recipe (a lock
	// where a semaphore lives or the reverse), like api's ErrLockConflict.
	ErrConflict = errors.New("recipe: existing key does not match the recipe's use")
	// ErrStaleSequencer: a Fence guard failed, so the sequencer is not valid
	// (S40); the guarded ops did not run.
	ErrStaleSequencer = errors.New("recipe: stale sequencer")
	// ErrLimitConflict: the semaphore's stored Limit differs from ours.
	ErrLimitConflict = errors.New("recipe: semaphore limit conflict")
	// ErrInUse: Cleanup found the lock or semaphore still held.
	ErrInUse = errors.New("recipe: still in use")
)
