// Package httpapitest is an in-memory impl.Backend for testing the HTTP API
// (and anything else that speaks to impl.Backend) without raft.
//
// A Store is one fake cluster's replicated state: commands go straight to a
// model.State, with the leader's lock-delay and TTL bookkeeping beside it,
// as impl.Server keeps them. Backend is one server's view of the Store;
// several views share one Store, so a follower sees every write at once
// (the double has no replication lag). Lock-delays live in the Store rather
// than per server, which is what a cluster with a stable leader observes.
package httpapitest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenurekv/tenure/impl"
	"github.com/tenurekv/tenure/model"
)

// Store is the state shared by every view of one fake cluster.
type Store struct {
	clock impl.Clock

	mu       sync.RWMutex
	state    *model.State
	index    uint64
	delays   model.LockDelays
	ttl      model.TTLDeadlines
	timers   map[string]impl.Timer
	changed  chan struct{}
	applies  int
	refusals []impl.LockDelayError
	nextID   uint64
	reads    atomic.Int64
}

// NewStore returns an empty cluster state on clock.
func NewStore(clock impl.Clock) *Store {
	return &Store{clock: clock, state: model.New(), timers: map[string]impl.Timer{},
		changed: make(chan struct{})}
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
func (s *Store) Refusals() []impl.LockDelayError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]impl.LockDelayError(nil), s.refusals...)
}

// Apply applies cmd as the leader would: lock-delay check before the log,
// then the state machine, then lock-delays and TTL deadlines.
func (s *Store) Apply(cmd model.Command) (model.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(cmd)
}

func (s *Store) applyLocked(cmd model.Command) (model.Result, error) {
	now := s.clock.Now()
	if cs := cmd.CreateSession; cs != nil && cs.ID == "" {
		c := *cs
		c.ID = s.freshID()
		cmd.CreateSession = &c
	}
	for _, key := range cmd.LockKeys() {
		if rem := s.delays.Remaining(key, now); rem > 0 {
			e := impl.LockDelayError{Key: key, Remaining: rem}
			s.refusals = append(s.refusals, e)
			return model.Result{}, &e
		}
	}
	s.index++
	s.applies++
	before := s.state.Index()
	res := s.state.Apply(s.index, cmd)
	for _, d := range res.LockDelays {
		s.delays.Arm(d.Key, now, d.Delay)
	}
	for _, id := range res.Invalidated {
		s.stopTTL(id)
	}
	if cs := cmd.CreateSession; cs != nil && res.Err == nil {
		if se, ok := s.state.Session(res.SessionID); ok {
			s.armTTL(se, now)
		}
	}
	if s.state.Index() != before {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return res, nil
}

// freshID returns a UUID-shaped ID no session has had; deterministic, so
// test runs repeat exactly.
func (s *Store) freshID() string {
	for {
		s.nextID++
		id := fmt.Sprintf("00000000-0000-4000-8000-%012x", s.nextID)
		if _, taken := s.state.Session(id); !taken {
			return id
		}
	}
}

// armTTL (re)starts a session's deadline of TTL × 2 (S19).
func (s *Store) armTTL(se model.Session, now time.Time) {
	ttl := se.TTLDuration()
	if ttl <= 0 {
		return
	}
	s.ttl.Reset(se.ID, now, ttl, model.DefaultTTLMultiplier)
	wait := ttl * model.DefaultTTLMultiplier
	if t, ok := s.timers[se.ID]; ok {
		t.Reset(wait)
		return
	}
	id := se.ID
	s.timers[id] = s.clock.AfterFunc(wait, func() { s.expire(id) })
}

func (s *Store) stopTTL(id string) {
	s.ttl.Remove(id)
	if t, ok := s.timers[id]; ok {
		t.Stop()
		delete(s.timers, id)
	}
}

// expire destroys a session whose deadline has passed. A timer that fired
// while a renew moved the deadline finds it in the future and does nothing.
func (s *Store) expire(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline, ok := s.ttl.Deadline(id)
	if !ok || deadline.After(s.clock.Now()) {
		return
	}
	s.stopTTL(id)
	_, _ = s.applyLocked(model.Command{DestroySession: &model.DestroySession{ID: id}})
}

func (s *Store) renew(id string) (model.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.state.Session(id)
	if !ok {
		return model.Session{}, impl.ErrSessionNotFound
	}
	s.armTTL(se, s.clock.Now())
	return se, nil
}

// Backend is one server's view of a Store; it implements impl.Backend.
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

var _ impl.Backend = (*Backend)(nil)

// New returns the leader of a fresh one-server cluster named node, on clock.
// Its node is registered with a passing serfHealth check (S47).
func New(node string, clock impl.Clock) *Backend {
	b := &Backend{store: NewStore(clock), node: node, isLeader: true, known: true,
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

// NodeName implements impl.Backend.
func (b *Backend) NodeName() string { return b.node }

// Leader implements impl.Backend.
func (b *Backend) Leader() (bool, string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.isLeader, b.leaderAddr, b.known
}

// Apply implements impl.Backend.
func (b *Backend) Apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	if !b.leading() {
		return model.Result{}, impl.ErrNotLeader
	}
	if err := ctx.Err(); err != nil {
		return model.Result{}, err
	}
	return b.store.Apply(cmd)
}

// Renew implements impl.Backend.
func (b *Backend) Renew(ctx context.Context, id string) (model.Session, error) {
	if !b.leading() {
		return model.Session{}, impl.ErrNotLeader
	}
	return b.store.renew(id)
}

// VerifyLeader implements impl.Backend.
func (b *Backend) VerifyLeader(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.isLeader {
		return impl.ErrNotLeader
	}
	return b.verifyErr
}

// Read implements impl.Backend.
func (b *Backend) Read(fn func(s *model.State)) {
	defer b.store.reads.Add(1)
	b.store.mu.RLock()
	defer b.store.mu.RUnlock()
	fn(b.store.state)
}

// Changed implements impl.Backend.
func (b *Backend) Changed() <-chan struct{} {
	b.store.mu.RLock()
	defer b.store.mu.RUnlock()
	return b.store.changed
}

// LastContact implements impl.Backend.
func (b *Backend) LastContact() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastContact
}

// RaftLeaderAddr implements impl.Backend.
func (b *Backend) RaftLeaderAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.raftLeader
}

// Peers implements impl.Backend.
func (b *Backend) Peers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.peers...)
}

// Clock implements impl.Backend.
func (b *Backend) Clock() impl.Clock { return b.store.clock }
