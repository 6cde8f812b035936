package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// Apply implements Backend.Apply: leader only, once the term is
// established; the rest is leader.Core.Apply over raft.
func (s *Server) Apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return model.Result{}, err
	}
	return s.leader.Apply(ctx, cmd)
}

// proposeCommand is leader.Core's Propose: cmd encoded and run through raft.
func (s *Server) proposeCommand(ctx context.Context, cmd model.Command) (model.Result, error) {
	data, err := s.fsm.Encode(cmd)
	if err != nil {
		return model.Result{}, err
	}
	return s.propose(ctx, data)
}

// proposeTimeout bounds how long a write waits to enter raft's queue and,
// once proposed, for its outcome. Raft settles a proposal on its own (commit,
// lost leadership, shutdown) long before this in practice; the bound only
// keeps a wedged raft from holding a request forever.
const proposeTimeout = 30 * time.Second

// propose runs one entry through raft and returns this server's FSM answer.
// The caller's context is deliberately not consulted: once an entry is
// proposed its outcome no longer depends on whoever asked, so a client that
// hangs up mid-write must not turn a commit into an error (a retry would
// then apply it twice). Only raft itself or proposeTimeout can end the wait.
func (s *Server) propose(_ context.Context, data []byte) (model.Result, error) {
	f := s.raft.Apply(data, proposeTimeout)
	timeout := time.NewTimer(proposeTimeout)
	defer timeout.Stop()
	err, waitErr := waitFuture(timeout.C, f)
	if waitErr != nil {
		return model.Result{}, fmt.Errorf("raft apply: no outcome within %v (the write may still commit): %w", proposeTimeout, waitErr)
	}
	switch {
	case err == nil:
	case errors.Is(err, raft.ErrNotLeader):
		return model.Result{}, ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		return model.Result{}, fmt.Errorf("raft apply: %w (the write may or may not commit)", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return model.Result{}, errShutdown
	default:
		return model.Result{}, fmt.Errorf("raft apply: %w", err)
	}
	switch r := f.Response().(type) {
	case model.Result:
		return r, nil
	case error:
		return model.Result{}, fmt.Errorf("raft apply: %w", r)
	default:
		return model.Result{}, fmt.Errorf("raft apply: unexpected FSM response %T", r)
	}
}

// Renew implements Backend.Renew (S20): leader only, never a raft write.
func (s *Server) Renew(ctx context.Context, id string) (model.Session, error) {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return model.Session{}, err
	}
	return s.leader.Renew(id)
}

// VerifyLeader implements Backend.VerifyLeader (?consistent): a quorum round
// on an established term. Unlike a write, nothing is left behind if the
// caller leaves, so the caller's context may end the wait.
func (s *Server) VerifyLeader(ctx context.Context) error {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return err
	}
	err, waitErr := waitFuture(ctx.Done(), s.raft.VerifyLeader())
	if waitErr != nil {
		waitErr = ctx.Err()
	}
	switch {
	case waitErr != nil:
		return fmt.Errorf("verify leadership: %w", waitErr)
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return ErrNotLeader
	case errors.Is(err, raft.ErrRaftShutdown):
		return errShutdown
	case err != nil:
		return fmt.Errorf("verify leadership: %w", err)
	}
	return nil
}

// errWaitEnded is waitFuture's answer when stop fired before the future.
var errWaitEnded = errors.New("gave up waiting for raft")

// waitFuture waits for a raft future or for stop, whichever comes first:
// err is the future's answer, waitErr errWaitEnded if stop came first. A nil
// stop waits for the future alone and costs no goroutine.
func waitFuture[T any](stop <-chan T, f raft.Future) (err, waitErr error) {
	if stop == nil {
		return f.Error(), nil
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err, nil
	case <-stop:
		return nil, errWaitEnded
	}
}
