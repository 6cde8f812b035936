package recipe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/internal/backoff"
)

// LockDelayHeader is tenure's answer to an acquire refused for lock-delay:
// the delay left on the leader's clock as a Go duration (SPEC S25).
const LockDelayHeader = "X-Tenure-Lock-Delay"

// LockIndexHeader and ModifyIndexHeader are tenure's answer to a successful
// acquire: the holding period it got (SPEC S64), so no read-back is needed.
const (
	LockIndexHeader   = "X-Tenure-Lock-Index"
	ModifyIndexHeader = "X-Tenure-Modify-Index"
)

// Defaults of LockOptions and SemaphoreOptions.
const (
	DefaultWaitTime = time.Minute            // one blocking query
	DefaultRetryMin = 100 * time.Millisecond // first pause after an error or a bare refusal
	DefaultRetryMax = 2 * time.Second        // longest such pause
)

// LockOptions configure a Lock.
type LockOptions struct {
	Key   string
	Value []byte // stored on the key by acquire and release
	// Flags are stored on the key (api.Lock uses api.LockFlagValue).
	Flags uint64
	// StrictFlags refuses with ErrConflict a key that exists with other
	// flags, as api.Lock does, so a lock and a semaphore on one prefix
	// notice each other.
	StrictFlags bool
	// Session is the session to create; ignored when SessionID is set.
	Session SessionOptions
	// SessionID uses an existing session: the caller renews and destroys
	// it, and Lost then reports only what the key monitor sees.
	SessionID string
	// WaitTime bounds one blocking query (default DefaultWaitTime).
	WaitTime time.Duration
	// RetryMin and RetryMax bound the pause after a transient error, and
	// after a refusal that carries no lock-delay header (Consul): the
	// recipe then waits on the key with a blocking query that long, doubling
	// from RetryMin to RetryMax, so it wakes early if someone else acquires.
	RetryMin, RetryMax time.Duration
	// OnRefused, if set, is called for each refused acquire, before the
	// wait; it must not block.
	OnRefused func(Refusal)
}

// Refusal describes one acquire the server refused although the key looked free.
type Refusal struct {
	Key string
	// FromHeader says the server named the remaining lock-delay (tenure).
	FromHeader bool
	// Remaining is that lock-delay (0 without the header).
	Remaining time.Duration
	// Wait is how long the recipe now waits before trying again: exactly
	// Remaining with the header, the backoff step without.
	Wait time.Duration
}

// Lock is a mutex on one key: Acquire blocks until this process holds it.
type Lock struct {
	c *Client
	o LockOptions
}

func (o *LockOptions) defaults() error {
	o.Key = strings.TrimPrefix(o.Key, "/")
	if o.Key == "" {
		return errors.New("recipe: lock key is empty")
	}
	if o.Session.TTL < 0 {
		return fmt.Errorf("recipe: session TTL %v is negative", o.Session.TTL)
	}
	if o.WaitTime <= 0 {
		o.WaitTime = DefaultWaitTime
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.RetryMax < o.RetryMin {
		return fmt.Errorf("recipe: RetryMax %v below RetryMin %v", o.RetryMax, o.RetryMin)
	}
	return nil
}

// Lock returns a mutex on o.Key.
func (c *Client) Lock(o LockOptions) (*Lock, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Lock{c: c, o: o}, nil
}

// Acquire creates a session (unless SessionID is set), then waits until
// it holds the key or ctx ends. Waiting uses blocking queries on the key; a
// refusal for lock-delay sleeps exactly what X-Tenure-Lock-Delay names, or
// backs off on a blocking query when the server names nothing (Consul).
func (l *Lock) Acquire(ctx context.Context) (*Hold, error) {
	sid, rn, err := l.c.openSession(ctx, l.o.SessionID, l.o.Session, api.SessionBehaviorRelease)
	if err != nil {
		return nil, err
	}
	seq, err := l.acquire(ctx, sid, rn)
	if err != nil {
		// Release first: if the acquire landed but its answer was lost,
		// destroying the session would arm a lock-delay on the key (S23).
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		_, _, _ = l.c.API.KV().Release(&api.KVPair{Key: l.o.Key, Value: l.o.Value, Flags: l.o.Flags, Session: sid}, (&api.WriteOptions{}).WithContext(cctx))
		l.c.closeSession(cctx, sid, rn)
		return nil, err
	}
	return l.c.newHold(seq, rn, func(ctx context.Context) error {
		_, _, err := l.c.API.KV().Release(&api.KVPair{Key: l.o.Key, Value: l.o.Value, Flags: l.o.Flags, Session: sid}, (&api.WriteOptions{}).WithContext(ctx))
		if err != nil {
			return fmt.Errorf("recipe: release %s: %w", l.o.Key, err)
		}
		return nil
	}, func(ctx context.Context) error {
		return l.c.watchKey(ctx, seq, l.o.WaitTime, l.o.RetryMin, l.o.RetryMax)
	}), nil
}

// cleanupContext gives best-effort cleanup a bounded life of its own, since
// the caller's ctx may be what ended the operation.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// openSession returns the session to use and, when it created one, its renewer.
func (c *Client) openSession(ctx context.Context, given string, o SessionOptions, behavior string) (string, *renewer, error) {
	if given != "" {
		return given, nil, nil
	}
	sent := c.Clock.Now()
	sid, err := c.createSession(ctx, o, behavior)
	if err != nil {
		return "", nil, err
	}
	return sid, c.startRenewer(sid, o.ttl(), sent), nil
}

// closeSession stops renewing and destroys a session the recipe created.
func (c *Client) closeSession(ctx context.Context, sid string, rn *renewer) error {
	if rn == nil {
		return nil
	}
	rn.Stop()
	return c.destroySession(ctx, sid)
}

// acquire is Acquire's wait loop; it returns the sequencer once sid holds the key.
func (l *Lock) acquire(ctx context.Context, sid string, rn *renewer) (Sequencer, error) {
	kv := l.c.API.KV()
	var waitIndex uint64
	waitTime := l.o.WaitTime
	pause := backoff.New(l.o.RetryMin, l.o.RetryMax)
	for {
		if err := ctx.Err(); err != nil {
			return Sequencer{}, fmt.Errorf("recipe: acquire %s: %w", l.o.Key, err)
		}
		if err := rn.lostErr(); err != nil {
			return Sequencer{}, fmt.Errorf("recipe: acquire %s: %w", l.o.Key, err)
		}
		q := (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: waitTime}).WithContext(ctx)
		e, meta, err := kv.Get(l.o.Key, q)
		if err != nil {
			if !api.IsRetryableError(err) || ctx.Err() != nil {
				return Sequencer{}, fmt.Errorf("recipe: read %s: %w", l.o.Key, err)
			}
			waitIndex = 0
			if err := sleep(ctx, l.c.Clock, pause.Next()); err != nil {
				return Sequencer{}, fmt.Errorf("recipe: acquire %s: %w", l.o.Key, err)
			}
			continue
		}
		if e != nil && l.o.StrictFlags && e.Flags != l.o.Flags {
			return Sequencer{}, fmt.Errorf("%w: %s has flags %#x, want %#x", ErrConflict, l.o.Key, e.Flags, l.o.Flags)
		}
		if e != nil && e.Session == sid {
			return Sequencer{Key: e.Key, LockIndex: e.LockIndex, Session: sid, ModifyIndex: e.ModifyIndex}, nil
		}
		if e != nil && e.Session != "" {
			// Held by someone else: wait for the key to change.
			waitIndex, waitTime = nextIndex(waitIndex, meta.LastIndex), l.o.WaitTime
			pause.Reset()
			continue
		}
		ans, err := l.c.tryAcquire(ctx, l.o.Key, sid, l.o.Value, l.o.Flags)
		if err != nil {
			if ctx.Err() != nil || isClientError(err) {
				return Sequencer{}, fmt.Errorf("recipe: acquire %s: %w", l.o.Key, err)
			}
			waitIndex = 0
			if err := sleep(ctx, l.c.Clock, pause.Next()); err != nil {
				return Sequencer{}, fmt.Errorf("recipe: acquire %s: %w", l.o.Key, err)
			}
			continue
		}
		if ans.ok && ans.named {
			return ans.seq, nil
		}
		if ans.ok {
			// A bare true (Consul): read the sequencer back, from the
			// leader, on the next turn of the loop. A default read is
			// enough: the session is this candidacy's own, so any state in
			// which it holds the key is at or after its acquire, as a
			// consistent read's would be. A deposed leader's state either
			// shows the hold too or sends the loop round again, so the
			// leadership check a consistent read adds to every hand-off
			// would buy nothing.
			waitIndex, waitTime = 0, l.o.WaitTime
			continue
		}
		if rem := ans.delay; rem > 0 {
			if l.o.OnRefused != nil {
				l.o.OnRefused(Refusal{Key: l.o.Key, FromHeader: true, Remaining: rem, Wait: rem})
			}
			if err := sleep(ctx, l.c.Clock, rem); err != nil {
				return Sequencer{}, fmt.Errorf("recipe: acquire %s: %w", l.o.Key, err)
			}
			waitIndex, waitTime = 0, l.o.WaitTime
			continue
		}
		// A bare false on a key that looked free is lock-delay or a race
		// lost to another acquirer; Consul does not say which (CONSUL.md §4).
		// Wait on the key for one backoff step: a new holder wakes us at once.
		w := pause.Next()
		if l.o.OnRefused != nil {
			l.o.OnRefused(Refusal{Key: l.o.Key, Wait: w})
		}
		waitIndex, waitTime = nextIndex(waitIndex, meta.LastIndex), w
	}
}

// nextIndex is the WaitIndex for the next blocking query; an index that
// went backwards (a server restored from a snapshot) restarts at 0.
func nextIndex(prev, last uint64) uint64 {
	if last < prev {
		return 0
	}
	return last
}

// isClientError reports a 4xx answer: retrying the same request cannot help.
func isClientError(err error) bool {
	var se api.StatusError
	return errors.As(err, &se) && se.Code >= 400 && se.Code < 500
}

// acquireAnswer is what one acquire PUT said.
type acquireAnswer struct {
	ok bool
	// delay is the remaining lock-delay a tenure server named on a
	// refusal (S25); 0 when it named none.
	delay time.Duration
	// seq is the holding period a tenure server named on a success (S64);
	// named says whether it did.
	seq   Sequencer
	named bool
}

// tryAcquire sends PUT /v1/kv/<key>?acquire=<sid> by hand because api hides
// the answer's headers, where a tenure server names the remaining
// lock-delay of a refusal (X-Tenure-Lock-Delay) and the holding period of a
// success (X-Tenure-Lock-Index, X-Tenure-Modify-Index). A malformed header
// is taken as absent: the Consul fallback still converges, one request
// later.
func (c *Client) tryAcquire(ctx context.Context, key, sid string, value []byte, flags uint64) (acquireAnswer, error) {
	q := url.Values{"acquire": {sid}}
	if flags != 0 {
		q.Set("flags", strconv.FormatUint(flags, 10))
	}
	if value == nil {
		value = []byte{}
	}
	resp, err := c.raw(ctx, "PUT", kvPath(key), q, value)
	if err != nil {
		return acquireAnswer{}, err
	}
	if resp.Status != 200 {
		return acquireAnswer{}, fmt.Errorf("recipe: acquire %s: %w", key, api.StatusError{Code: resp.Status, Body: strings.TrimSpace(string(resp.Body))})
	}
	switch strings.TrimSpace(string(resp.Body)) {
	case "true":
		ans := acquireAnswer{ok: true}
		lockIndex, err1 := strconv.ParseUint(resp.Header.Get(LockIndexHeader), 10, 64)
		modifyIndex, err2 := strconv.ParseUint(resp.Header.Get(ModifyIndexHeader), 10, 64)
		if err1 == nil && err2 == nil && lockIndex > 0 && modifyIndex > 0 {
			ans.seq = Sequencer{Key: key, LockIndex: lockIndex, Session: sid, ModifyIndex: modifyIndex}
			ans.named = true
		}
		return ans, nil
	case "false":
	default:
		return acquireAnswer{}, fmt.Errorf("recipe: acquire %s: unexpected answer %q", key, resp.Body)
	}
	if d, err := time.ParseDuration(resp.Header.Get(LockDelayHeader)); err == nil && d > 0 {
		return acquireAnswer{delay: d}, nil
	}
	return acquireAnswer{}, nil
}

// watchKey blocks until seq's holding period of seq.Key is over (the key
// is gone, free, held by another session, or held again by seq's session
// since), or ctx ends, and says which.
func (c *Client) watchKey(ctx context.Context, seq Sequencer, waitTime, retryMin, retryMax time.Duration) error {
	var e *api.KVPair
	return c.watchUntilLost(ctx, waitTime, backoff.New(retryMin, retryMax), func(q *api.QueryOptions) (uint64, error) {
		var (
			meta *api.QueryMeta
			err  error
		)
		e, meta, err = c.API.KV().Get(seq.Key, q)
		if err != nil {
			return 0, err
		}
		return meta.LastIndex, nil
	}, func() error {
		switch {
		case e == nil:
			return fmt.Errorf("%w: %s was deleted", ErrHolderChanged, seq.Key)
		case e.Session == "":
			return fmt.Errorf("%w: %s was released", ErrHolderChanged, seq.Key)
		case e.Session != seq.Session:
			return fmt.Errorf("%w: %s is held by session %s", ErrHolderChanged, seq.Key, e.Session)
		}
		return retaken(e, seq)
	})
}

// retaken reports a key that seq's session holds again, in a holding
// period after seq's: released and taken again (another Lock or Semaphore
// sharing the session) between two reads of a watcher.
func retaken(e *api.KVPair, seq Sequencer) error {
	switch {
	case e.LockIndex != seq.LockIndex:
		// A new holding period has a new LockIndex (S27).
		return fmt.Errorf("%w: %s was taken again by its session (LockIndex %d, held at %d)", ErrHolderChanged, seq.Key, e.LockIndex, seq.LockIndex)
	case seq.ModifyIndex != 0 && e.CreateIndex > seq.ModifyIndex:
		// Deleted and taken again: Consul may then restart LockIndex at
		// the value held (S34), but the key's incarnation is newer than
		// the acquire.
		return fmt.Errorf("%w: %s was deleted and taken again by its session", ErrHolderChanged, seq.Key)
	}
	return nil
}

// watchUntilLost is the loop behind every Hold's Lost: consistent blocking
// reads, each from the index the last one returned, until lost (called
// after each successful read) reports the hold gone, or ctx ends. Read
// errors are retried after a pause: whether contact is lost is the
// renewer's call (one TTL), not one failed read's.
func (c *Client) watchUntilLost(ctx context.Context, waitTime time.Duration, pause backoff.Doubling,
	read func(q *api.QueryOptions) (lastIndex uint64, err error), lost func() error) error {
	var idx uint64
	for {
		last, err := read((&api.QueryOptions{RequireConsistent: true, WaitIndex: idx, WaitTime: waitTime}).WithContext(ctx))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			idx = 0
			if err := sleep(ctx, c.Clock, pause.Next()); err != nil {
				return err
			}
			continue
		}
		pause.Reset()
		if err := lost(); err != nil {
			return err
		}
		idx = nextIndex(idx, last)
	}
}

// Cleanup deletes the key if nobody holds it, like api.Lock.Destroy:
// ErrInUse if it is held (or changed under us), ErrConflict on foreign flags
// when StrictFlags is set. A missing key is fine.
func (l *Lock) Cleanup(ctx context.Context) error {
	kv := l.c.API.KV()
	e, _, err := kv.Get(l.o.Key, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("recipe: read %s: %w", l.o.Key, err)
	}
	if e == nil {
		return nil
	}
	if l.o.StrictFlags && e.Flags != l.o.Flags {
		return fmt.Errorf("%w: %s has flags %#x", ErrConflict, l.o.Key, e.Flags)
	}
	if e.Session != "" {
		return fmt.Errorf("%w: %s is held by %s", ErrInUse, l.o.Key, e.Session)
	}
	ok, _, err := kv.DeleteCAS(e, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("recipe: delete %s: %w", l.o.Key, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s changed", ErrInUse, l.o.Key)
	}
	return nil
}
