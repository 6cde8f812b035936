package server

import (
	"context"
	"errors"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// Backend is the server as the HTTP API (impl/internal/httpapi) sees it. *Server
// implements it; httpapi's tests may use a double. Keeping the seam this
// narrow lets sim/ drive the same handlers over a simulated network.
type Backend interface {
	// NodeName is this server's node: the default Node of a new session (S2).
	NodeName() string
	// Leader reports whether this server leads, and the leader's server
	// port (its raft address) when one is known: followers forward writes
	// and default reads there (package rpc).
	Leader() (isLeader bool, leaderAddr string, known bool)
	// Apply proposes cmd through raft and returns once it is applied on this
	// server. Leader only: elsewhere it returns ErrNotLeader. An acquire (plain
	// or txn lock) of a key under lock-delay returns *leader.LockDelayError without
	// proposing anything (S22, S25). If instead the state machine refused the
	// lock for an invalidation the leader's check could not yet see
	// (Result.DelayRefused), Apply returns that applied Result together with
	// a *leader.LockDelayError, so both refusals are reported alike. A CreateSession
	// or a prepared-query create with an empty ID is given a fresh unique ID
	// first (S1, S57).
	Apply(ctx context.Context, cmd model.Command) (model.Result, error)
	// Renew resets a session's TTL deadline (leader only) and returns the
	// session; leader.ErrSessionNotFound if it does not exist (S20).
	Renew(ctx context.Context, id string) (model.Session, error)
	// VerifyLeader confirms leadership with a quorum round (?consistent).
	VerifyLeader(ctx context.Context) error
	// Read calls fn with the applied state under a read lock. fn must not
	// keep the pointer or mutate the state.
	Read(fn func(s *model.State))
	// Changed returns a channel that is closed at the next applied change,
	// for blocking queries (S46). Take it before Read, so that a change
	// between the read and the wait is not missed.
	Changed() <-chan struct{}
	// LastContact is the time since this server last heard from the leader;
	// 0 on the leader.
	LastContact() time.Duration
	// RaftLeaderAddr and Peers answer /v1/status/leader and /v1/status/peers.
	RaftLeaderAddr() string
	Peers() []string
	// Clock is the server's clock; blocking-query waits use it so that the
	// simulator's virtual time governs them.
	Clock() clock.Clock
}

// ErrNotLeader is returned by leader-only operations on a follower.
var ErrNotLeader = errors.New("not the raft leader")

// RaftOperator is what a Backend that runs raft offers the operator
// endpoints (/v1/operator/raft/*): an optional capability, so that an
// in-memory Backend need not pretend to have raft.
type RaftOperator interface {
	RaftConfiguration() ([]RaftServer, uint64, error)
	LastIndex() uint64
	RemovePeer(id, address string) error
	// RaftStats are raft's counters, for /v1/agent/self and consul info.
	RaftStats() map[string]string
}

var _ RaftOperator = (*Server)(nil)
