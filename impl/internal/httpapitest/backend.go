// Package httpapitest is an in-memory server.Backend for testing the HTTP API
// (and anything else that speaks to server.Backend) without raft.
//
// A Store is one fake cluster's replicated state: commands go straight to a
// model.State through leader.Core, the leader logic server.Server runs
// over raft (session IDs, lock-delay check, TTL book), so the double cannot
// drift from the server. Backend is one server's view of the Store;
// several views share one Store, so a follower sees every write at once
// (the double has no replication lag). Lock-delays live in the Store rather
// than per server, which is what a cluster with a stable leader observes.
package httpapitest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/impl/internal/server"
	"github.com/tenurekv/tenure/model"
)

// Store is the state shared by every view of one fake cluster. Its leader
// logic is leader.Core, the code server.Server runs, proposing straight to
// the state instead of through raft; the Store's one leader term never ends.
type Store struct {
	clock  clock.Clock
	leader *leader.Core

	mu       sync.RWMutex
	state    *model.State
	index    uint64 // the fake log's last index
	changed  chan struct{}
	applies  int
	refusals []leader.LockDelayError
	nextID   atomic.Uint64 // only the core calls it, serialised
	reads    atomic.Int64
}

// newStore returns an empty cluster state on clock.
func newStore(clock clock.Clock) *Store {
	s := &Store{clock: clock, state: model.New(), changed: make(chan struct{})}
	s.leader = leader.New(leader.Config{
		Clock:         clock,
		TTLMultiplier: model.DefaultTTLMultiplier,
		NewID:         s.freshID,
		Read:          s.read,
		Propose:       s.propose,
		// One shared state stands for every server, so it is always current.
		Confirm: func(context.Context) error { return nil },
		Expire:  s.expire,
	})
	s.leader.StartTerm()
	return s
}

// Applies counts the commands that reached the state machine (refusals
// before "raft", such as lock-delay, do not count).
func (s *Store) Applies() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applies
}

// Reads counts Backend.Read calls that have returned; a test uses it to
// learn that a blocking read has looked at the state.
func (s *Store) Reads() int { return int(s.reads.Load()) }

// Hash is the state's digest: equal before and after means nothing changed.
func (s *Store) Hash() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state.Hash()
}

// Snapshot returns a copy of the state.
func (s *Store) Snapshot() *model.State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state.Clone()
}

// Refusals lists the acquires refused for lock-delay, in order.
func (s *Store) Refusals() []leader.LockDelayError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]leader.LockDelayError(nil), s.refusals...)
}

// Apply applies cmd as the leader would (leader.Core.Apply), recording
// lock-delay refusals.
func (s *Store) Apply(cmd model.Command) (model.Result, error) {
	return s.apply(context.Background(), cmd)
}

// InitACL writes what a server's leader writes when ACLs are enabled
// (leader.Core.InitACL): the builtin policies, the initial management
// token of secret initialManagement (if not ""), the anonymous token.
func (s *Store) InitACL(initialManagement string) error {
	refused, err := s.leader.InitACL(context.Background(), initialManagement)
	return errors.Join(append(refused, err)...)
}

func (s *Store) apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	res, err := s.leader.Apply(ctx, cmd)
	if lde, ok := errors.AsType[*leader.LockDelayError](err); ok {
		s.mu.Lock()
		s.refusals = append(s.refusals, *lde)
		s.mu.Unlock()
	}
	return res, err
}

// propose is the core's Propose: the state machine at once, with the side
// effects the server's FSM has, in the same lock order.
func (s *Store) propose(ctx context.Context, cmd model.Command) (model.Result, error) {
	if err := ctx.Err(); err != nil {
		return model.Result{}, err
	}
	s.mu.Lock()
	s.index++
	s.applies++
	before := s.state.Index()
	res := s.state.Apply(s.index, cmd)
	s.leader.ArmLockDelays(res.LockDelays)
	if s.state.Index() != before {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	s.leader.SessionsInvalidated(res.Invalidated)
	return res, nil
}

func (s *Store) read(fn func(st *model.State)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(s.state)
}

// freshID returns UUID-shaped IDs in sequence; deterministic, so test runs
// repeat exactly. The core skips any a live session holds.
func (s *Store) freshID() string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", s.nextID.Add(1))
}

// expire destroys sessions whose deadline passed, as server.Server does:
// through the leader's Apply (lock-delay included), skipping any session
// invalidated meanwhile.
func (s *Store) expire(ids []string) {
	for _, id := range ids {
		var live bool
		s.read(func(st *model.State) { _, live = st.Session(id) })
		if live {
			_, _ = s.Apply(model.Command{DestroySession: &model.DestroySession{ID: id}})
		}
	}
}

// Backend is one server's view of a Store; it implements server.Backend.
type Backend struct {
	store *Store
	node  string

	mu          sync.Mutex
	isLeader    bool
	leaderAddr  string
	known       bool
	lastContact time.Duration
	verifyErr   error
	raftLeader  string
	peers       []string
}

var _ server.Backend = (*Backend)(nil)

// New returns the leader of a fresh one-server cluster named node, on clock.
// Its node is registered with a passing serfHealth check (S47).
func New(node string, clock clock.Clock) *Backend {
	b := &Backend{store: newStore(clock), node: node, isLeader: true, known: true,
		raftLeader: "127.0.0.1:8300", peers: []string{"127.0.0.1:8300"}}
	b.registerSelf()
	return b
}

// Follower returns another server of b's cluster, named node, which knows
// no leader until SetLeader says so. Its node is registered too (S47).
func (b *Backend) Follower(node string) *Backend {
	b.mu.Lock()
	f := &Backend{store: b.store, node: node, raftLeader: b.raftLeader, peers: b.peers}
	b.mu.Unlock()
	f.registerSelf()
	return f
}

func (b *Backend) registerSelf() {
	_, err := b.store.Apply(model.Command{Register: &model.Register{Node: b.node, Address: "127.0.0.1",
		Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: "Serf Health Status", Status: model.HealthPassing}}}})
	if err != nil {
		panic(fmt.Sprintf("httpapitest: register %s: %v", b.node, err)) // cannot happen: registers lock nothing
	}
}

// Store is the shared cluster state.
func (b *Backend) Store() *Store { return b.store }

// SetLeader sets what Leader reports; isLeader also decides whether Apply,
// Renew and VerifyLeader work.
func (b *Backend) SetLeader(isLeader bool, leaderHTTPAddr string, known bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.isLeader, b.leaderAddr, b.known = isLeader, leaderHTTPAddr, known
}

// SetLastContact sets what LastContact reports.
func (b *Backend) SetLastContact(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastContact = d
}

// SetVerifyError makes VerifyLeader fail with err (nil restores success).
func (b *Backend) SetVerifyError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.verifyErr = err
}

func (b *Backend) leading() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.isLeader
}

// NodeName implements server.Backend.
func (b *Backend) NodeName() string { return b.node }

// Leader implements server.Backend.
func (b *Backend) Leader() (bool, string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.isLeader, b.leaderAddr, b.known
}

// Apply implements server.Backend.
func (b *Backend) Apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	if !b.leading() {
		return model.Result{}, server.ErrNotLeader
	}
	return b.store.apply(ctx, cmd)
}

// Renew implements server.Backend.
func (b *Backend) Renew(ctx context.Context, id string) (model.Session, error) {
	if !b.leading() {
		return model.Session{}, server.ErrNotLeader
	}
	return b.store.leader.Renew(id)
}

// VerifyLeader implements server.Backend.
func (b *Backend) VerifyLeader(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.isLeader {
		return server.ErrNotLeader
	}
	return b.verifyErr
}

// Read implements server.Backend.
func (b *Backend) Read(fn func(s *model.State)) {
	defer b.store.reads.Add(1)
	b.store.mu.RLock()
	defer b.store.mu.RUnlock()
	fn(b.store.state)
}

// Changed implements server.Backend.
func (b *Backend) Changed() <-chan struct{} {
	b.store.mu.RLock()
	defer b.store.mu.RUnlock()
	return b.store.changed
}

// LastContact implements server.Backend.
func (b *Backend) LastContact() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastContact
}

// RaftLeaderAddr implements server.Backend.
func (b *Backend) RaftLeaderAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.raftLeader
}

// Peers implements server.Backend.
func (b *Backend) Peers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.peers...)
}

// Clock implements server.Backend.
func (b *Backend) Clock() clock.Clock { return b.store.clock }

var _ server.CoordinateQueue = (*Backend)(nil)

// QueueCoordinate implements server.CoordinateQueue without the real
// server's period: the update is written at once, as a batch of one, so a
// test reads it back without waiting (S89).
func (b *Backend) QueueCoordinate(u model.Coordinate) error {
	if !b.leading() {
		return server.ErrNotLeader
	}
	res, err := b.store.apply(context.Background(), model.Command{Coordinates: &model.CoordinateBatch{Updates: []model.Coordinate{u}}})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}
