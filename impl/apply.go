package impl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// Apply implements Backend.Apply: leader only, once the term is
// established; the rest is LeaderCore.Apply over raft.
func (s *Server) Apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return model.Result{}, err
	}
	return s.leader.Apply(ctx, cmd)
}

// proposeCommand is LeaderCore's Propose: cmd encoded and run through raft.
func (s *Server) proposeCommand(ctx context.Context, cmd model.Command) (model.Result, error) {
	data, err := s.codec.encodeCommand(cmd)
	if err != nil {
		return model.Result{}, err
	}
	return s.propose(ctx, data)
}

// propose runs one entry through raft and returns this server's FSM answer.
func (s *Server) propose(ctx context.Context, data []byte) (model.Result, error) {
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	f := s.raft.Apply(data, timeout)
	err, waitErr := waitFuture(ctx, f)
	if waitErr != nil {
		return model.Result{}, fmt.Errorf("raft apply: %w (the write may still commit)", waitErr)
	}
	switch {
	case err == nil:
	case errors.Is(err, raft.ErrNotLeader):
		return model.Result{}, ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		return model.Result{}, fmt.Errorf("raft apply: %w (the write may or may not commit)", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return model.Result{}, ErrShutdown
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
// on an established term.
func (s *Server) VerifyLeader(ctx context.Context) error {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return err
	}
	err, waitErr := waitFuture(ctx, s.raft.VerifyLeader())
	switch {
	case waitErr != nil:
		return fmt.Errorf("verify leadership: %w", waitErr)
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return ErrNotLeader
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	case err != nil:
		return fmt.Errorf("verify leadership: %w", err)
	}
	return nil
}

// waitFuture waits for a raft future or the context, whichever ends first:
// err is the future's answer, waitErr the context's. A context that can
// never end costs no goroutine.
func waitFuture(ctx context.Context, f raft.Future) (err, waitErr error) {
	if ctx.Done() == nil {
		return f.Error(), nil
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
