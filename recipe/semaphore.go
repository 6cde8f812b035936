package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/internal/backoff"
)

// SemaphoreKey is the coordination key under the prefix, as api names it.
const SemaphoreKey = ".lock"

// SemaphoreOptions configure a Semaphore. The layout is api.Semaphore's, so
// both can contend on one prefix: contender keys <prefix>/<session> acquired
// with flags api.SemaphoreFlagValue, and <prefix>/.lock holding
// {"Limit":N,"Holders":{"<session>":true,...}} written only by cas.
//
// Two deliberate differences, both invisible to api.Semaphore: a holder is
// pruned unless its session holds its own contender key (api keeps it if
// the session holds any key under the prefix; within the recipe the two are
// the same), and the cas that admits us also checks, in the same txn, that
// we still hold our contender key, so a dead contender is never written
// into Holders. Listings use <prefix>/, not api's bare prefix, so a sibling
// prefix such as <prefix>-other is not mistaken for contenders.
type SemaphoreOptions struct {
	Prefix string
	Limit  int
	Value  []byte // stored on this contender's key
	// Session defaults to behavior delete, like api, so a dead contender's
	// key disappears; ignored when SessionID is set.
	Session   SessionOptions
	SessionID string // use an existing session (the caller renews it)
	// WaitTime, RetryMin and RetryMax as in LockOptions.
	WaitTime, RetryMin, RetryMax time.Duration
}

// Semaphore admits at most Limit holders at a time (S51).
type Semaphore struct {
	c       *Client
	o       SemaphoreOptions
	lockKey string
}

// semaphoreRecord is the value of <prefix>/.lock; field names and types are
// api's, so either implementation reads the other's writes.
type semaphoreRecord struct {
	Limit   int
	Holders map[string]bool
}

// Semaphore returns a semaphore on o.Prefix.
func (c *Client) Semaphore(o SemaphoreOptions) (*Semaphore, error) {
	o.Prefix = strings.Trim(o.Prefix, "/")
	if o.Prefix == "" {
		return nil, errors.New("recipe: semaphore prefix is empty")
	}
	if o.Limit <= 0 {
		return nil, fmt.Errorf("recipe: semaphore limit %d must be positive", o.Limit)
	}
	lo := LockOptions{Key: o.Prefix, Session: o.Session, WaitTime: o.WaitTime, RetryMin: o.RetryMin, RetryMax: o.RetryMax}
	if err := lo.defaults(); err != nil {
		return nil, err
	}
	o.WaitTime, o.RetryMin, o.RetryMax = lo.WaitTime, lo.RetryMin, lo.RetryMax
	return &Semaphore{c: c, o: o, lockKey: o.Prefix + "/" + SemaphoreKey}, nil
}

// Slot is one admission to a Semaphore. Its Sequencer is the contender
// key's; AdmitIndex is the ModifyIndex of the .lock write that admitted it.
// Lost closes when the contender key leaves the session, the session is
// pruned from or leaves Holders, the session is gone, or renewal failed
// for one TTL.
type Slot struct {
	*Hold
	sem   *Semaphore
	admit uint64
}

// AdmitIndex is the .lock ModifyIndex this slot was admitted at.
func (s *Slot) AdmitIndex() uint64 { return s.admit }

// Fence runs ops guarded by the contender key's sequencer. Within the
// recipe a session leaves Holders only by releasing, which deletes its
// contender key first, so a valid contender sequencer of an admitted slot
// means the slot is still held; Verify checks both facts at one index.
func (s *Slot) Fence(ctx context.Context, ops api.TxnOps) (api.TxnResults, error) {
	return s.c.Fence(ctx, s.seq, ops)
}

// Verify checks, at a single index, that the contender sequencer is valid
// and the session is listed in Holders (S51).
func (s *Slot) Verify(ctx context.Context) error {
	sem := s.sem
	res, err := s.c.Fence(ctx, s.seq, api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: sem.lockKey}}})
	if err != nil {
		return err
	}
	if len(res) != 1 || res[0].KV == nil {
		return fmt.Errorf("recipe: verify %s: unexpected txn results", sem.lockKey)
	}
	rec, err := sem.decode(res[0].KV)
	if err != nil {
		return err
	}
	if !rec.Holders[s.seq.Session] {
		return &FenceError{Sequencer: s.seq, What: fmt.Sprintf("session %s is not among the holders in %s", s.seq.Session, sem.lockKey)}
	}
	return nil
}

// Acquire enters the contest and blocks until admitted or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*Slot, error) {
	sid, rn, err := s.c.openSession(ctx, s.o.SessionID, s.o.Session, api.SessionBehaviorDelete)
	if err != nil {
		return nil, err
	}
	seq, admit, err := s.enter(ctx, sid, rn)
	if err != nil {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		_ = s.leave(cctx, sid)
		_ = s.c.closeSession(cctx, sid, rn)
		return nil, err
	}
	h := s.c.newHold(seq, rn, func(ctx context.Context) error { return s.leave(ctx, sid) },
		func(ctx context.Context) error { return s.watch(ctx, seq) })
	return &Slot{Hold: h, sem: s, admit: admit}, nil
}

// enter takes the contender key, then waits for room and writes itself
// into Holders by cas.
func (s *Semaphore) enter(ctx context.Context, sid string, rn *renewer) (Sequencer, uint64, error) {
	contender := s.o.Prefix + "/" + sid
	ok, resp, _, err := s.c.API.Txn().Txn(api.TxnOps{{KV: &api.KVTxnOp{
		Verb: api.KVLock, Key: contender, Value: s.o.Value, Flags: api.SemaphoreFlagValue, Session: sid,
	}}}, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return Sequencer{}, 0, fmt.Errorf("recipe: take contender key %s: %w", contender, err)
	}
	if !ok || resp == nil || len(resp.Results) != 1 || resp.Results[0].KV == nil {
		return Sequencer{}, 0, fmt.Errorf("recipe: take contender key %s: %s", contender, txnWhat(resp))
	}
	e := resp.Results[0].KV
	seq := Sequencer{Key: contender, LockIndex: e.LockIndex, Session: sid, ModifyIndex: e.ModifyIndex}

	var waitIndex uint64
	pause := backoff.New(s.o.RetryMin, s.o.RetryMax)
	for {
		if err := ctx.Err(); err != nil {
			return Sequencer{}, 0, fmt.Errorf("recipe: semaphore %s: %w", s.o.Prefix, err)
		}
		if err := rn.lostErr(); err != nil {
			return Sequencer{}, 0, fmt.Errorf("recipe: semaphore %s: %w", s.o.Prefix, err)
		}
		pairs, meta, err := s.c.API.KV().List(s.o.Prefix+"/", (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: s.o.WaitTime}).WithContext(ctx))
		if err != nil {
			if !api.IsRetryableError(err) || ctx.Err() != nil {
				return Sequencer{}, 0, fmt.Errorf("recipe: list %s: %w", s.o.Prefix, err)
			}
			waitIndex = 0
			if err := sleep(ctx, s.c.Clock, pause.Next()); err != nil {
				return Sequencer{}, 0, fmt.Errorf("recipe: semaphore %s: %w", s.o.Prefix, err)
			}
			continue
		}
		pause.Reset()
		lockPair, rec, err := s.state(pairs)
		if err != nil {
			return Sequencer{}, 0, err
		}
		if !holds(pairs, contender, sid) {
			return Sequencer{}, 0, fmt.Errorf("%w: contender key %s no longer held", ErrSessionGone, contender)
		}
		if rec.Holders[sid] {
			// Our cas landed but its answer was lost, or a retry.
			return seq, lockPair.ModifyIndex, nil
		}
		if len(rec.Holders) >= rec.Limit {
			waitIndex = nextIndex(waitIndex, meta.LastIndex)
			continue
		}
		rec.Holders[sid] = true
		val, err := json.Marshal(rec)
		if err != nil {
			return Sequencer{}, 0, fmt.Errorf("recipe: encode %s: %w", s.lockKey, err)
		}
		// check-session keeps a dead contender out of Holders: every name
		// written there held its contender key when written.
		ok, resp, _, err := s.c.API.Txn().Txn(api.TxnOps{
			{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: contender, Session: sid}},
			{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: s.lockKey, Value: val, Flags: api.SemaphoreFlagValue, Index: lockPair.ModifyIndex}},
		}, (&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return Sequencer{}, 0, fmt.Errorf("recipe: update %s: %w", s.lockKey, err)
			}
			waitIndex = 0
			continue
		}
		if ok && len(resp.Results) == 2 && resp.Results[1].KV != nil {
			return seq, resp.Results[1].KV.ModifyIndex, nil
		}
		if resp != nil && len(resp.Errors) > 0 && resp.Errors[0].OpIndex == 0 {
			return Sequencer{}, 0, fmt.Errorf("%w: %s", ErrSessionGone, resp.Errors[0].What)
		}
		// Stale cas: someone else wrote .lock; read it again at once.
		waitIndex = 0
	}
}

// txnWhat summarises a refused txn for an error message.
func txnWhat(resp *api.TxnResponse) string {
	if resp == nil || len(resp.Errors) == 0 {
		return "refused"
	}
	return resp.Errors[0].What
}

// holds reports whether key is in pairs and held by sid.
func holds(pairs api.KVPairs, key, sid string) bool {
	for _, p := range pairs {
		if p.Key == key {
			return p.Session == sid
		}
	}
	return false
}

// state finds .lock in a listing, checks it belongs to a semaphore with our
// Limit, and prunes holders whose contender key is no longer held by them.
// An absent .lock reads as an empty record (ModifyIndex 0 = create by cas).
func (s *Semaphore) state(pairs api.KVPairs) (*api.KVPair, *semaphoreRecord, error) {
	lockPair := &api.KVPair{Key: s.lockKey, Flags: api.SemaphoreFlagValue}
	for _, p := range pairs {
		if p.Key == s.lockKey {
			lockPair = p
		}
	}
	if lockPair.Flags != api.SemaphoreFlagValue {
		return nil, nil, fmt.Errorf("%w: %s has flags %#x", ErrConflict, s.lockKey, lockPair.Flags)
	}
	rec, err := s.decode(lockPair)
	if err != nil {
		return nil, nil, err
	}
	for h := range rec.Holders {
		if !holds(pairs, s.o.Prefix+"/"+h, h) {
			delete(rec.Holders, h)
		}
	}
	return lockPair, rec, nil
}

// decode reads a .lock value; an absent or empty one is an empty record.
func (s *Semaphore) decode(p *api.KVPair) (*semaphoreRecord, error) {
	rec := &semaphoreRecord{Limit: s.o.Limit}
	if p != nil && len(p.Value) > 0 {
		if err := json.Unmarshal(p.Value, rec); err != nil {
			return nil, fmt.Errorf("recipe: decode %s: %w", s.lockKey, err)
		}
	}
	if rec.Holders == nil {
		rec.Holders = map[string]bool{}
	}
	if rec.Limit != s.o.Limit {
		return nil, fmt.Errorf("%w (lock: %d, local: %d)", ErrLimitConflict, rec.Limit, s.o.Limit)
	}
	return rec, nil
}

// watch blocks until the slot is lost (or ctx ends) and says why.
func (s *Semaphore) watch(ctx context.Context, seq Sequencer) error {
	var pairs api.KVPairs
	return s.c.watchUntilLost(ctx, s.o.WaitTime, backoff.New(s.o.RetryMin, s.o.RetryMax), func(q *api.QueryOptions) (uint64, error) {
		var (
			meta *api.QueryMeta
			err  error
		)
		pairs, meta, err = s.c.API.KV().List(s.o.Prefix+"/", q)
		if err != nil {
			return 0, err
		}
		return meta.LastIndex, nil
	}, func() error {
		if !holds(pairs, seq.Key, seq.Session) {
			return fmt.Errorf("%w: contender key %s is no longer held by %s", ErrHolderChanged, seq.Key, seq.Session)
		}
		for _, p := range pairs {
			if p.Key == seq.Key {
				if err := retaken(p, seq); err != nil {
					return err
				}
			}
		}
		_, rec, err := s.state(pairs)
		if err != nil {
			return err
		}
		if !rec.Holders[seq.Session] {
			return fmt.Errorf("%w: %s no longer lists %s", ErrHolderChanged, s.lockKey, seq.Session)
		}
		return nil
	})
}

// leave deletes sid's contender key, then removes sid from Holders (by
// cas, retried). The key goes first so that from then on the slot's
// contender sequencer is stale: Slot.Fence, guarded by it alone, can never
// pass for a session on its way out of Holders.
func (s *Semaphore) leave(ctx context.Context, sid string) error {
	kv := s.c.API.KV()
	if _, err := kv.Delete(s.o.Prefix+"/"+sid, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("recipe: delete contender key: %w", err)
	}
	for {
		p, _, err := kv.Get(s.lockKey, (&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			return fmt.Errorf("recipe: read %s: %w", s.lockKey, err)
		}
		if p == nil || p.Flags != api.SemaphoreFlagValue {
			break
		}
		var rec semaphoreRecord
		if len(p.Value) > 0 {
			if err := json.Unmarshal(p.Value, &rec); err != nil {
				return fmt.Errorf("recipe: decode %s: %w", s.lockKey, err)
			}
		}
		if !rec.Holders[sid] {
			break
		}
		delete(rec.Holders, sid)
		val, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("recipe: encode %s: %w", s.lockKey, err)
		}
		ok, _, err := kv.CAS(&api.KVPair{Key: s.lockKey, Value: val, Flags: api.SemaphoreFlagValue, ModifyIndex: p.ModifyIndex}, (&api.WriteOptions{}).WithContext(ctx))
		if err != nil {
			return fmt.Errorf("recipe: update %s: %w", s.lockKey, err)
		}
		if ok {
			break
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("recipe: update %s: %w", s.lockKey, err)
		}
	}
	return nil
}

// Cleanup deletes .lock when no live holder remains, like
// api.Semaphore.Destroy: ErrInUse otherwise, ErrConflict on foreign flags.
func (s *Semaphore) Cleanup(ctx context.Context) error {
	pairs, _, err := s.c.API.KV().List(s.o.Prefix+"/", (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("recipe: list %s: %w", s.o.Prefix, err)
	}
	lockPair, rec, err := s.state(pairs)
	if err != nil {
		return err
	}
	if lockPair.ModifyIndex == 0 {
		return nil
	}
	if len(rec.Holders) > 0 {
		return fmt.Errorf("%w: %s has %d live holders", ErrInUse, s.lockKey, len(rec.Holders))
	}
	ok, _, err := s.c.API.KV().DeleteCAS(lockPair, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("recipe: delete %s: %w", s.lockKey, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s changed", ErrInUse, s.lockKey)
	}
	return nil
}
