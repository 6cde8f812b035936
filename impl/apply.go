package impl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// Apply implements Backend.Apply: leader only; lock-delay checked before
// raft; new sessions get a fresh ID and, with a TTL, a deadline.
func (s *Server) Apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return model.Result{}, err
	}
	cmd = s.withSessionID(cmd)
	cmd, err := s.checkLockDelay(cmd)
	if err != nil {
		return model.Result{}, err
	}
	data, err := s.codec.encodeCommand(cmd)
	if err != nil {
		return model.Result{}, err
	}
	res, err := s.propose(ctx, data)
	if err != nil {
		return model.Result{}, err
	}
	return s.answer(cmd, res)
}

// answer finishes an applied command: an FSM lock-delay refusal becomes a
// *LockDelayError, and a new TTL session gets its deadline.
func (s *Server) answer(cmd model.Command, res model.Result) (model.Result, error) {
	if len(res.DelayRefused) > 0 {
		// The state machine refused a lock for an invalidation the check
		// above could not see yet (S22); report it like a check refusal,
		// with what remains of this server's entry (S25).
		key := res.DelayRefused[0]
		return res, &LockDelayError{Key: key, Remaining: max(s.delays.remaining(key), time.Nanosecond)}
	}
	if c := cmd.CreateSession; c != nil && res.Err == nil {
		s.ttl.reset(c.ID, model.Session{TTL: c.TTL}.TTLDuration(), s.sessionLive)
	}
	return res, nil
}

// withSessionID gives a CreateSession without an ID a fresh one that no live
// session uses (S1). The caller's command is not modified.
func (s *Server) withSessionID(cmd model.Command) model.Command {
	if cmd.CreateSession == nil || cmd.CreateSession.ID != "" {
		return cmd
	}
	c := *cmd.CreateSession
	// Serialised, so an injected NewID need not be safe for concurrent use.
	s.idMu.Lock()
	defer s.idMu.Unlock()
	for {
		c.ID = s.cfg.NewID()
		if !s.sessionLive(c.ID) {
			break
		}
	}
	cmd.CreateSession = &c
	return cmd
}

// checkLockDelay refuses an acquire of a key under lock-delay (S22, S25) and
// stamps every lock op with the state index the check saw, so the state
// machine can refuse it if an invalidation it could not see lands first.
// The index and the delays are read under the FSM's lock, which is also
// where the FSM arms delays, so the pair is consistent.
func (s *Server) checkLockDelay(cmd model.Command) (model.Command, error) {
	keys := cmd.LockKeys()
	if len(keys) == 0 {
		return cmd, nil
	}
	var (
		seen uint64
		err  error
	)
	s.fsm.read(func(st *model.State) {
		seen = st.Index()
		err = s.delays.check(keys)
	})
	if err != nil {
		return cmd, err
	}
	if cmd.KV != nil {
		op := *cmd.KV
		op.LockDelaySeen = seen
		cmd.KV = &op
	}
	if cmd.Txn != nil {
		ops := slices.Clone(cmd.Txn.Ops)
		for i := range ops {
			if ops[i].Verb == model.KVLock {
				ops[i].LockDelaySeen = seen
			}
		}
		cmd.Txn = &model.Txn{Ops: ops}
	}
	return cmd, nil
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

// sessionLive reports whether the applied state holds session id.
func (s *Server) sessionLive(id string) bool {
	var ok bool
	s.fsm.read(func(st *model.State) { _, ok = st.Session(id) })
	return ok
}

// Renew implements Backend.Renew (S20): leader only, never a raft write.
func (s *Server) Renew(ctx context.Context, id string) (model.Session, error) {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return model.Session{}, err
	}
	var (
		se model.Session
		ok bool
	)
	s.fsm.read(func(st *model.State) { se, ok = st.Session(id) })
	if !ok {
		return model.Session{}, ErrSessionNotFound
	}
	s.ttl.reset(id, se.TTLDuration(), s.sessionLive)
	return se, nil
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
		return ErrShutdown
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
