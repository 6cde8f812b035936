package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// confirmCommitWait is how long a leadership confirmation waits for a
// commit that would settle it before it starts a heartbeat round of its
// own. Under load a commit comes well within it. A log that has applied
// nothing for longer is taken as idle, and the round starts at once.
const confirmCommitWait = 2 * time.Millisecond

// leaderView is what confirmByCommit reads of raft; *raft.Raft has it.
type leaderView interface {
	State() raft.RaftState
	CurrentTerm() uint64
	LastIndex() uint64
}

// appliedView is what confirmByCommit reads of the state machine
// (*fsm.FSM).
type appliedView interface {
	// Reached returns a channel closed once index has been applied.
	Reached(index uint64) <-chan struct{}
	// SinceAdvance is how long ago the last index was applied.
	SinceAdvance() time.Duration
}

// confirmByCommit returns nil once this server has been confirmed as
// leader by a quorum after the call began, as raft's VerifyLeader does
// (verify), but without a heartbeat round of its own when the log is busy.
//
// It notes the term and the last log index while leading, then waits for
// the state machine to apply the next index. A leader only appends to its
// own log, so that entry was appended after the call, replicated after it
// and committed by a majority that still accepted this term after the
// call: no later term had been elected by then, and nothing a later term
// commits can precede the call. Every entry committed before the call is
// at or below the noted index (a leader's log holds every committed
// entry), so the applied state holds them all. The proof holds only if
// this server led the noted term throughout: it must still lead and the
// term must be unchanged afterwards (state read before term, since a
// server regains leadership only in a higher term). Otherwise, or if no
// entry is applied within wait, verify decides; it decides at once when
// nothing has been applied for longer than wait, as no commit is likely
// to come soon.
func confirmByCommit(ctx context.Context, r leaderView, applied appliedView, wait time.Duration, verify func(context.Context) error) error {
	term := r.CurrentTerm()
	if r.State() != raft.Leader || applied.SinceAdvance() > wait {
		return verify(ctx)
	}
	next := r.LastIndex() + 1
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-applied.Reached(next):
		if r.State() == raft.Leader && r.CurrentTerm() == term {
			return nil
		}
	case <-timer.C:
	case <-ctx.Done():
		return fmt.Errorf("confirm leadership: %w", ctx.Err())
	}
	return verify(ctx)
}

// confirmLeadership is leader.Core's Confirm: confirmByCommit over this
// server's raft and state machine, with VerifyLeader as the fallback.
func (s *Server) confirmLeadership(ctx context.Context) error {
	if _, err := s.waitLeaderReady(ctx); err != nil {
		return err
	}
	return confirmByCommit(ctx, s.raft, s.fsm, confirmCommitWait, s.VerifyLeader)
}
