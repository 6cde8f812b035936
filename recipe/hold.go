package recipe

import (
	"context"
	"errors"
	"sync"
)

// Hold is one holding period of a Lock (or an Election's term). Its Lost
// channel closes when the key's holder changes, the session is gone, renewal
// failed for one TTL, or Release was called; Err then says which. Losing is
// a belief, not proof: guard writes with Fence (S50).
type Hold struct {
	c       *Client
	seq     Sequencer
	rn      *renewer // nil when the caller owns the session
	release func(context.Context) error

	lost chan struct{}
	err  error // set before lost closes

	stopWatch context.CancelFunc
	watchDone chan struct{}

	mu       sync.Mutex
	released bool
}

// newHold starts watching: watch blocks until the holding ends (or its ctx
// is cancelled) and release gives the key or slot back.
func (c *Client) newHold(seq Sequencer, rn *renewer, release, watch func(context.Context) error) *Hold {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hold{c: c, seq: seq, rn: rn, release: release, lost: make(chan struct{}), stopWatch: cancel, watchDone: make(chan struct{})}
	watched := make(chan error, 1)
	go func() { watched <- watch(ctx) }()
	go func() {
		defer close(h.watchDone)
		var renewLost <-chan struct{}
		if rn != nil {
			renewLost = rn.lost
		}
		var err error
		got := false
		select {
		case err = <-watched:
			got = true
		case <-renewLost:
			err = rn.err
		}
		if ctx.Err() != nil {
			err = ErrReleased
		}
		h.err = err
		close(h.lost)
		cancel()
		if !got {
			<-watched
		}
	}()
	return h
}

// Sequencer is the hold's (Key, LockIndex, Session), plus the ModifyIndex
// seen right after the acquire.
func (h *Hold) Sequencer() Sequencer { return h.seq }

// Lost is closed when the hold ends, for whatever reason.
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// Err is why Lost closed (ErrHolderChanged, ErrSessionGone, ErrRenewTimeout,
// ErrReleased, wrapped); nil while the hold lasts.
func (h *Hold) Err() error {
	select {
	case <-h.lost:
		return h.err
	default:
		return nil
	}
}

// Release gives the key back (without arming lock-delay, S23) and destroys
// the session the recipe created. It is safe to call after Lost closed, and
// more than once.
func (h *Hold) Release(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	h.released = true
	h.stopWatch()
	<-h.watchDone
	// Release before destroying: destroying a session that still holds the
	// key would arm lock-delay and delay the next holder.
	var errs []error
	if h.rn != nil {
		h.rn.Stop()
	}
	errs = append(errs, h.release(ctx))
	if h.rn != nil {
		errs = append(errs, h.c.destroySession(ctx, h.seq.Session))
	}
	return errors.Join(errs...)
}
