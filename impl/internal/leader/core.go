package leader

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// Core is what a leader does around its log, without the log: it
// gives new sessions IDs (S1), refuses and stamps acquires under lock-delay
// (S22, S25), and keeps the TTL book (S18-S21). Server runs it over raft;
// httpapitest runs the same code over a bare model.State, so a fix to this
// logic lands in both at once.
type Core struct {
	read    func(fn func(st *model.State))
	propose func(ctx context.Context, cmd model.Command) (model.Result, error)
	confirm func(ctx context.Context) error
	watch   func(key string) (<-chan struct{}, func())
	newID   func() string
	clock   clock.Clock

	idMu   sync.Mutex // serialises newID, which need not be safe for concurrent use
	line   acquireLine
	turns  turns
	delays *LockDelays
	ttl    *ttlTimers
}

// Config is what a Core runs on. Every field is required.
type Config struct {
	// Clock times lock-delays and TTL deadlines.
	Clock clock.Clock
	// TTLMultiplier scales a session's TTL into its deadline (S19).
	TTLMultiplier float64
	// NewID returns candidate session IDs; calls are serialised.
	NewID func() string
	// Read calls fn with the applied state under the lock the state machine
	// holds while it calls ArmLockDelays, so the lock-delay check sees
	// delays and index consistently.
	Read func(fn func(st *model.State))
	// Propose replicates cmd and returns this server's state-machine answer.
	Propose func(ctx context.Context, cmd model.Command) (model.Result, error)
	// Confirm returns nil once a quorum round begun after the call has
	// confirmed that this server still leads: every write acknowledged
	// before the call, by this leader or an earlier one, is then in the
	// state Read sees. Server uses the commit of a later entry when one
	// comes soon, else raft's VerifyLeader (confirmByCommit); neither adds
	// a log entry.
	Confirm func(ctx context.Context) error
	// Expire is handed the sessions whose TTL deadline passed, from a timer
	// goroutine; it must not block, and is not called while no term runs.
	Expire func(ids []string)
	// WatchKey, if set, returns a channel closed at the next applied change
	// of key, and how to stop watching. With it an acquire of a held key
	// waits up to HoldWait for the holder to let go before it is refused.
	WatchKey func(key string) (changed <-chan struct{}, stop func())
}

// HoldWait is how long an acquire of a key another session holds waits
// at the leader for the key's next change (with Config.WatchKey). A
// refusal that lands just before the holder lets go sends a consul/api
// Lock waiter, which reads the key free, to sleep 5 s (CONSUL.md §11);
// under contention most holders let go within it. It bounds what a
// refused acquire costs its client, besides one commit and a leadership
// confirmation, and so sets the p99 of a contended acquire. Side by side,
// 2 ms gave consul/api Lock clients a lower request p99 than 5 ms, and
// no more refusals, and did as well as 1 ms or better on every one-key
// row; 5 ms did better only for 64 spinning clients on one key, far
// below Consul either way (bench/results/2026-11-29-tail-latency.md).
const HoldWait = 2 * time.Millisecond

// New returns a core with an inactive TTL book (see StartTerm).
func New(cfg Config) *Core {
	return &Core{
		read:    cfg.Read,
		propose: cfg.Propose,
		confirm: cfg.Confirm,
		watch:   cfg.WatchKey,
		newID:   cfg.NewID,
		clock:   cfg.Clock,
		delays:  NewLockDelays(cfg.Clock),
		ttl:     newTTLTimers(cfg.Clock, cfg.TTLMultiplier, cfg.Expire),
	}
}

// Apply proposes cmd as a leader must: a new session or prepared query
// gets a fresh ID, an acquire under lock-delay is refused before it is
// proposed, and a new TTL session gets its deadline. See Backend.Apply for the errors.
func (l *Core) Apply(ctx context.Context, cmd model.Command) (model.Result, error) {
	cmd = l.withSessionID(cmd)
	cmd = l.withQueryID(cmd)
	cmd = l.withACLIDs(cmd) // acl.go
	cmd, err := l.checkLockDelay(cmd)
	if err != nil {
		return model.Result{}, err
	}
	if cmd.KV != nil && cmd.KV.Verb == model.KVLock {
		return l.applyLock(ctx, cmd)
	}
	res, err := l.propose(ctx, cmd)
	if err != nil {
		return model.Result{}, err
	}
	return l.answer(cmd, res)
}

// applyLock runs a stand-alone acquire: proposed if the key is free and no
// other acquire of it is in flight (acquireLine), else decided again on
// that one's outcome; refused from the state, without an entry, if another
// session holds the key (S29).
//
// What one request waits for is bounded (issue 37): for a held key, its
// holder's next change for at most HoldWait; for an acquire in flight, that
// one's commit; and one leadership confirmation, begun as soon as the key
// is found contended and run meanwhile. An acquire that waited for another
// one in flight and lost the key to it is refused as soon as that one
// applies; before, it went back to wait for the next holder's release and
// race again, and one request could so wait through any number of
// hand-offs. Of the waiters a release wakes together, the session that
// has waited longest goes first (turns), so no client loses hand-off after
// hand-off to a draw.
func (l *Core) applyLock(ctx context.Context, cmd model.Command) (model.Result, error) {
	key := cmd.KV.Key
	conf := l.newConfirmation(ctx)
	defer conf.stop()
	var (
		raced      bool      // waited for an acquire in flight
		holdUntil  time.Time // end of the wait for the holder, once begun
		yieldUntil time.Time // end of deferring to a senior waiter, once begun
		tn         *turn     // with WatchKey: this acquire's place among the waiters (turns)
	)
	if l.watch != nil {
		tn = l.turns.enter(key, cmd.KV.Session)
		defer l.turns.leave(tn)
	}
	for {
		var changed <-chan struct{}
		stop := func() {}
		if l.watch != nil && !raced {
			// Taken before the state is read, so a change in between is seen.
			changed, stop = l.watch(key)
		}
		if !l.heldByOther(*cmd.KV) {
			stop()
			if tn != nil && !l.line.busy(key) {
				if moved, ok := l.turns.outranked(tn); ok {
					now := time.Now()
					if yieldUntil.IsZero() {
						yieldUntil = now.Add(turnYield)
					}
					if left := yieldUntil.Sub(now); left > 0 {
						if err := l.awaitChange(ctx, moved, left); err != nil {
							return model.Result{}, err
						}
						continue
					}
				}
			}
			if done, ok := l.line.take(key); ok {
				if tn != nil {
					l.turns.took(tn)
				}
				res, err := l.propose(ctx, cmd)
				done()
				if err != nil {
					return model.Result{}, err
				}
				if tn != nil && res.OK {
					l.turns.acquired(tn)
				}
				return l.answer(cmd, res)
			}
			if tn != nil {
				l.turns.waiting(tn)
			}
			conf.start()
			if err := l.line.wait(ctx, key); err != nil {
				return model.Result{}, err
			}
			raced = true
			continue
		}
		if tn != nil {
			l.turns.waiting(tn)
		}
		conf.start()
		if changed != nil {
			now := time.Now()
			if holdUntil.IsZero() {
				holdUntil = now.Add(HoldWait)
			}
			if left := holdUntil.Sub(now); left > 0 {
				err := l.awaitChange(ctx, changed, left)
				stop()
				if err != nil {
					return model.Result{}, err
				}
				continue
			}
		}
		stop()
		if res, refused, err := l.refuseHeld(conf, cmd); refused || err != nil {
			return res, err
		}
	}
}

// awaitChange returns once changed is closed, d has passed, or ctx ends
// (its error). d is a wait for the scheduler, not a protocol timeout, so
// it runs on the runtime's clock (virtual in the simulator's bubbles), not
// on the core's, which tests and skewed nodes move by hand.
func (l *Core) awaitChange(ctx context.Context, changed <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// refuseHeld answers an acquire of a key that another live session holds
// without a log entry (S29). Such a refusal changes nothing, and contended
// locks see mostly refusals; each would otherwise cost a commit, with its
// fsyncs on a majority. The answer must still be linearizable. A deposed
// leader that has not yet noticed reads a state that may lack writes its
// successor acknowledged, so the decision is taken from a state read after
// a confirmation, as ?consistent reads are served: once a quorum has
// answered a round begun after the request arrived, no later term can have
// committed anything before the request, and every write acknowledged
// before it is applied here. Every state this server applies later holds
// those writes too, and only entries committed since, so one confirmation
// serves every later read of the request. It reports false when the key is
// no longer held.
func (l *Core) refuseHeld(conf *confirmation, cmd model.Command) (model.Result, bool, error) {
	if err := conf.wait(); err != nil {
		return model.Result{}, false, err
	}
	var (
		held  bool
		index uint64
	)
	l.read(func(st *model.State) { held, index = st.LockHeldByOther(*cmd.KV), st.Index() })
	return model.Result{Index: index}, held, nil
}

// confirmation is one request's leadership confirmation (Config.Confirm),
// begun once and run beside the request's other waits, so that an acquire
// that loses the key to another is answered as soon as that one applies.
// An uncontended acquire never begins one.
type confirmation struct {
	l      *Core
	parent context.Context
	cancel context.CancelFunc // set once begun
	done   chan struct{}
	err    error
}

func (l *Core) newConfirmation(ctx context.Context) *confirmation {
	return &confirmation{l: l, parent: ctx}
}

// start begins the confirmation unless it has begun.
func (c *confirmation) start() {
	if c.cancel != nil {
		return
	}
	var ctx context.Context
	ctx, c.cancel = context.WithCancel(c.parent)
	c.done = make(chan struct{})
	go func() {
		c.err = c.l.confirm(ctx)
		close(c.done)
	}()
}

// wait starts the confirmation if need be and returns its outcome.
func (c *confirmation) wait() error {
	c.start()
	<-c.done
	return c.err
}

// stop ends a confirmation the request no longer needs.
func (c *confirmation) stop() {
	if c.cancel != nil {
		c.cancel()
	}
}

func (l *Core) heldByOther(op model.KVOp) (held bool) {
	l.read(func(st *model.State) { held = st.LockHeldByOther(op) })
	return held
}

// Renew restarts a session's TTL deadline (S20); it writes nothing.
func (l *Core) Renew(id string) (model.Session, error) {
	var (
		se model.Session
		ok bool
	)
	l.read(func(st *model.State) { se, ok = st.Session(id) })
	if !ok {
		return model.Session{}, ErrSessionNotFound
	}
	l.ttl.reset(id, se.TTLDuration(), l.SessionLive)
	return se, nil
}

// StartTerm activates the TTL book with a fresh deadline for every session:
// a new leader cannot know when a session was last renewed (S21). Call it
// once the state holds every entry committed before the term.
func (l *Core) StartTerm() {
	l.ttl.start(func() (out []model.Session) {
		l.read(func(st *model.State) { out = st.SessionList("") })
		return out
	})
}

// EndTerm empties and deactivates the TTL book: a deposed leader must never
// expire a session (S21).
func (l *Core) EndTerm() { l.ttl.stop() }

// ArmLockDelays starts the delays an applied command reported. The state
// machine calls it under its write lock, before the release is visible, so
// no acquire can see the key free and pass the check.
func (l *Core) ArmLockDelays(delays []model.LockDelay) { l.delays.Arm(delays) }

// SessionsInvalidated drops invalidated sessions from the TTL book. The
// state machine calls it after releasing its lock: the book reads the state
// under its own lock, so calling it under the state's lock could deadlock.
func (l *Core) SessionsInvalidated(ids []string) { l.ttl.remove(ids) }

// ForgetLockDelays drops every delay, as Consul does on snapshot restore.
func (l *Core) ForgetLockDelays() { l.delays.Reset() }

// answer finishes an applied command: a state-machine lock-delay refusal
// becomes a *LockDelayError, and a new TTL session gets its deadline.
func (l *Core) answer(cmd model.Command, res model.Result) (model.Result, error) {
	if len(res.DelayRefused) > 0 {
		// The state machine refused a lock for an invalidation the check
		// could not see yet (S22); report it like a check refusal, with what
		// remains of this server's entry (S25).
		key := res.DelayRefused[0]
		return res, &LockDelayError{Key: key, Remaining: max(l.delays.Remaining(key), time.Nanosecond)}
	}
	if c := cmd.CreateSession; c != nil && res.Err == nil {
		l.ttl.reset(c.ID, model.Session{TTL: c.TTL}.TTLDuration(), l.SessionLive)
	}
	return res, nil
}

// withSessionID gives a CreateSession without an ID a fresh one that no live
// session uses (S1). The caller's command is not modified.
func (l *Core) withSessionID(cmd model.Command) model.Command {
	if cmd.CreateSession == nil || cmd.CreateSession.ID != "" {
		return cmd
	}
	c := *cmd.CreateSession
	l.idMu.Lock()
	defer l.idMu.Unlock()
	for {
		c.ID = l.newID()
		if !l.SessionLive(c.ID) {
			break
		}
	}
	cmd.CreateSession = &c
	return cmd
}

// withQueryID gives a prepared-query create without an ID a fresh one that
// no stored query uses as its ID or name (S57): a query is found by ID
// first, then by name, so an ID that equals a name would hide that query.
// The caller's command is not modified.
func (l *Core) withQueryID(cmd model.Command) model.Command {
	if cmd.Query == nil || cmd.Query.Op != model.QueryCreate || cmd.Query.Query.ID != "" {
		return cmd
	}
	op := *cmd.Query
	l.idMu.Lock()
	defer l.idMu.Unlock()
	for {
		op.Query.ID = l.newID()
		var taken bool
		l.read(func(st *model.State) { _, taken = st.QueryNamed(op.Query.ID) })
		if !taken {
			break
		}
	}
	cmd.Query = &op
	return cmd
}

// checkLockDelay refuses an acquire of a key under lock-delay (S22, S25) and
// stamps every lock op with the state index the check saw, so the state
// machine can refuse it if an invalidation it could not see lands first.
// Index and delays are read under the state's lock, which is also where the
// state machine arms delays, so the pair is consistent.
func (l *Core) checkLockDelay(cmd model.Command) (model.Command, error) {
	keys := cmd.LockKeys()
	if len(keys) == 0 {
		return cmd, nil
	}
	var (
		seen uint64
		err  error
	)
	l.read(func(st *model.State) {
		seen = st.Index()
		err = l.delays.Check(keys)
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
			if kv := ops[i].KV; kv != nil && kv.Verb == model.KVLock {
				stamped := *kv
				stamped.LockDelaySeen = seen
				ops[i].KV = &stamped
			}
		}
		cmd.Txn = &model.Txn{Ops: ops}
	}
	return cmd, nil
}

// SessionLive reports whether the applied state holds session id.
func (l *Core) SessionLive(id string) bool {
	var ok bool
	l.read(func(st *model.State) { _, ok = st.Session(id) })
	return ok
}

// TTLDeadline is session id's deadline in the TTL book, if it has one; the
// book is empty while this server does not lead.
func (l *Core) TTLDeadline(id string) (time.Time, bool) { return l.ttl.deadline(id) }

// InTerm reports whether the TTL book runs: between StartTerm and EndTerm.
func (l *Core) InTerm() bool { return l.ttl.isActive() }
