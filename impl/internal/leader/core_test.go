package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/model"
)

// coreHarness runs a Core over a bare model.State, the way the server's FSM
// would: delays armed under the state's lock, the TTL book told after it.
// before, if set, runs just before each proposal is applied.
type coreHarness struct {
	core  *Core
	clock *clocktest.Manual
	log   *expiryLog

	mu       sync.RWMutex
	st       *model.State
	index    uint64
	proposed int
	before   func(cmd model.Command)
	ids      []string // NewID's answers, in order

	confirms      atomic.Int64 // the core may confirm on a goroutine of its own
	beforeConfirm func()       // runs inside Confirm, as if the round took a while
	confirmErr    error

	watches map[string][]chan struct{} // Config.WatchKey's channels, under mu
}

func newCoreHarness(t *testing.T, ids ...string) *coreHarness {
	t.Helper()
	return newCoreHarnessWith(t, false, ids...)
}

// newCoreHarnessWith gives the core Config.WatchKey if watch is set.
func newCoreHarnessWith(t *testing.T, watch bool, ids ...string) *coreHarness {
	t.Helper()
	h := &coreHarness{clock: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), log: newExpiryLog(), st: model.New(), ids: ids,
		watches: map[string][]chan struct{}{}}
	var watchKey func(string) (<-chan struct{}, func())
	if watch {
		watchKey = h.watchKey
	}
	h.core = New(Config{
		Clock: h.clock, TTLMultiplier: 2, NewID: h.newID,
		Read: func(fn func(*model.State)) {
			h.mu.RLock()
			defer h.mu.RUnlock()
			fn(h.st)
		},
		Propose:  h.propose,
		Confirm:  h.confirm,
		Expire:   h.log.expire,
		WatchKey: watchKey,
	})
	h.apply(t, model.Command{Register: &model.Register{Node: "n", Address: "127.0.0.1"}})
	return h
}

func (h *coreHarness) newID() string {
	id := h.ids[0]
	h.ids = h.ids[1:]
	return id
}

func (h *coreHarness) propose(_ context.Context, cmd model.Command) (model.Result, error) {
	if h.before != nil {
		h.before(cmd)
	}
	h.mu.Lock()
	h.index++
	h.proposed++
	res := h.st.Apply(h.index, cmd)
	h.core.ArmLockDelays(res.LockDelays)
	if cmd.KV != nil {
		for _, ch := range h.watches[cmd.KV.Key] {
			close(ch)
		}
		delete(h.watches, cmd.KV.Key)
	}
	h.mu.Unlock()
	h.core.SessionsInvalidated(res.Invalidated)
	return res, nil
}

// watchKey is Config.WatchKey over the harness's state: a channel closed
// when the next KV command on key is applied.
func (h *coreHarness) watchKey(key string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan struct{})
	h.watches[key] = append(h.watches[key], ch)
	return ch, func() {}
}

// watching is how many watches wait on key.
func (h *coreHarness) watching(key string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.watches[key])
}

func (h *coreHarness) confirm(context.Context) error {
	h.confirms.Add(1)
	if h.beforeConfirm != nil {
		h.beforeConfirm()
	}
	return h.confirmErr
}

func (h *coreHarness) apply(t *testing.T, cmd model.Command) model.Result {
	t.Helper()
	res, err := h.core.Apply(context.Background(), cmd)
	if err != nil || res.Err != nil {
		t.Fatalf("apply %+v: %v, %v", cmd, err, res.Err)
	}
	return res
}

func lockCmd(key, sid string) model.Command {
	return model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: key, Session: sid}}
}

func TestLeaderCoreSkipsLiveIDs(t *testing.T) {
	h := newCoreHarness(t, "a", "a", "b")
	create := model.Command{CreateSession: &model.CreateSession{Node: "n"}}
	if got := h.apply(t, create).SessionID; got != "a" {
		t.Fatalf("first ID %q", got)
	}
	if got := h.apply(t, create).SessionID; got != "b" {
		t.Fatalf("second ID %q, want b (a is live)", got)
	}
}

// TestLeaderCoreRefusesBeforeProposing: an acquire under lock-delay is
// refused with the remaining delay and never reaches the log (S22, S25).
func TestLeaderCoreRefusesBeforeProposing(t *testing.T) {
	h := newCoreHarness(t, "a", "b")
	a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n", LockDelay: 5 * time.Second}}).SessionID
	b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	h.apply(t, lockCmd("k", a))
	h.apply(t, model.Command{DestroySession: &model.DestroySession{ID: a}})
	h.clock.Advance(2 * time.Second)
	proposed := h.proposed
	_, err := h.core.Apply(context.Background(), lockCmd("k", b))
	var lde *LockDelayError
	if !errors.As(err, &lde) || lde.Key != "k" || lde.Remaining != 3*time.Second {
		t.Fatalf("acquire under lock-delay: %v", err)
	}
	if h.proposed != proposed {
		t.Fatal("a refused acquire was proposed")
	}
	h.clock.Advance(3 * time.Second)
	if !h.apply(t, lockCmd("k", b)).OK {
		t.Fatal("acquire after the delay failed")
	}
}

// TestLeaderCoreRefusesHeldKeyAfterConfirming: an acquire of a key another
// live session holds is answered false without a log entry, but only from
// a state read after leadership is confirmed (S29); a free key, the
// holder's own re-acquire and a failed confirmation take other paths.
func TestLeaderCoreRefusesHeldKeyAfterConfirming(t *testing.T) {
	h := newCoreHarness(t, "a", "b")
	a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	h.apply(t, lockCmd("k", a))
	if h.confirms.Load() != 0 {
		t.Fatalf("an acquire of a free key confirmed leadership %d times", h.confirms.Load())
	}

	proposed := h.proposed
	res, err := h.core.Apply(context.Background(), lockCmd("k", b))
	if err != nil || res.OK || res.Err != nil || res.Index != h.index {
		t.Fatalf("acquire of a held key: %+v, %v; want a plain refusal at the current index %d", res, err, h.index)
	}
	if h.proposed != proposed || h.confirms.Load() != 1 {
		t.Fatalf("held key: %d proposals, %d confirmations; want 0 and 1", h.proposed-proposed, h.confirms.Load())
	}

	if !h.apply(t, lockCmd("k", a)).OK || h.proposed != proposed+1 || h.confirms.Load() != 1 {
		t.Fatal("the holder's own re-acquire must be proposed, without a confirmation")
	}

	notLeader := errors.New("not the raft leader")
	h.confirmErr = notLeader
	if _, err := h.core.Apply(context.Background(), lockCmd("k", b)); !errors.Is(err, notLeader) {
		t.Fatalf("refusal without confirmed leadership: %v, want the confirmation's error", err)
	}
	h.confirmErr = nil

	// Released while the round ran: the state read after it decides, and
	// the acquire goes to the log and wins.
	h.beforeConfirm = func() {
		if _, err := h.propose(context.Background(), model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: a}}); err != nil {
			panic(err)
		}
	}
	if res := h.apply(t, lockCmd("k", b)); !res.OK {
		t.Fatalf("acquire of a key released during the confirmation: %+v", res)
	}
}

// TestLeaderCoreReportsStateMachineRefusal: a lock stamped before an
// invalidation that lands ahead of it is refused by the state machine, and
// Apply reports that like a check refusal, with the applied Result.
func TestLeaderCoreReportsStateMachineRefusal(t *testing.T) {
	h := newCoreHarness(t, "a", "b")
	a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n", LockDelay: 5 * time.Second}}).SessionID
	b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	h.apply(t, lockCmd("k", a))
	// a still holds k when b's lock is checked, so the leader confirms it
	// leads before refusing; a is destroyed meanwhile, and the lock then
	// goes to the log stamped with the state before the destroy.
	h.beforeConfirm = func() {
		h.beforeConfirm = nil
		if _, err := h.propose(context.Background(), model.Command{DestroySession: &model.DestroySession{ID: a}}); err != nil {
			panic(err)
		}
	}
	h.before = func(cmd model.Command) {
		if cmd.KV != nil && cmd.KV.Session == b && cmd.KV.LockDelaySeen == 0 {
			panic(fmt.Sprintf("lock proposed unstamped: %+v", cmd.KV))
		}
	}
	res, err := h.core.Apply(context.Background(), lockCmd("k", b))
	var lde *LockDelayError
	if !errors.As(err, &lde) || lde.Key != "k" || lde.Remaining != 5*time.Second || res.OK || res.Index == 0 {
		t.Fatalf("late lock: result %+v, err %v; want an applied refusal with *LockDelayError", res, err)
	}
}

// TestLeaderCoreTTLOnlyInTerm: TTL deadlines are kept only between
// StartTerm and endTerm; a deposed leader expires nothing (S21).
func TestLeaderCoreTTLOnlyInTerm(t *testing.T) {
	h := newCoreHarness(t, "early", "late")
	ttl := func() model.Command {
		return model.Command{CreateSession: &model.CreateSession{Node: "n", TTL: "10s"}}
	}
	early := h.apply(t, ttl()).SessionID
	if _, ok := h.core.ttl.deadline(early); ok {
		t.Fatal("a deadline was set outside a term")
	}
	h.core.StartTerm()
	late := h.apply(t, ttl()).SessionID
	h.clock.Advance(15 * time.Second)
	if _, err := h.core.Renew(late); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(5 * time.Second)
	if got := h.log.waitFire(t); len(got) != 1 || got[0] != early {
		t.Fatalf("expired %v at 20s, want [%s] (%s was renewed)", got, early, late)
	}
	h.core.EndTerm()
	h.clock.Advance(time.Minute)
	h.log.none(t)
	if _, err := h.core.Renew("nope"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("renew of unknown session: %v", err)
	}
}

// TestLeaderCoreQueryIDs: a prepared-query create without an ID gets a fresh
// one, skipping IDs a stored query has as its ID or (ignoring case) its
// name; an update keeps the caller's ID (S57).
func TestLeaderCoreQueryIDs(t *testing.T) {
	h := newCoreHarness(t, "q1", "q1", "WEB", "q2")
	create := func(name string) model.Command {
		return model.Command{Query: &model.QueryOp{Op: model.QueryCreate,
			Query: model.PreparedQuery{Name: name, Service: model.ServiceQuery{Service: "web"}}}}
	}
	if got := h.apply(t, create("web")).QueryID; got != "q1" {
		t.Fatalf("first query ID %q, want q1", got)
	}
	// q1 is a query's ID and WEB a query's name: both are skipped.
	if got := h.apply(t, create("db")).QueryID; got != "q2" {
		t.Fatalf("second query ID %q, want q2", got)
	}
	update := model.Command{Query: &model.QueryOp{Op: model.QueryUpdate,
		Query: model.PreparedQuery{ID: "q1", Name: "web", Service: model.ServiceQuery{Service: "api"}}}}
	if got := h.apply(t, update).QueryID; got != "q1" {
		t.Fatalf("update answered ID %q, want q1", got)
	}
	if q, ok := h.st.Query("q1"); !ok || q.Service.Service != "api" {
		t.Fatalf("q1 after update: %+v %v", q, ok)
	}
	if len(h.ids) != 0 {
		t.Fatalf("unused IDs left %v: the update drew an ID", h.ids)
	}
}

// TestLeaderCoreQueuesAcquiresOfOneKey: while one acquire of a key is in
// the log, a second acquire of that key waits for its outcome instead of
// becoming a second entry; it is then refused from the state (S29). If the
// first fails, the second goes to the log itself. Other keys never wait.
func TestLeaderCoreQueuesAcquiresOfOneKey(t *testing.T) {
	h := newCoreHarness(t, "a", "b")
	a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID

	inLog, resume := make(chan struct{}), make(chan struct{})
	h.before = func(cmd model.Command) {
		if cmd.KV != nil && cmd.KV.Session == a {
			h.before = nil
			close(inLog)
			<-resume
		}
	}
	first := applyAsync(t, h, lockCmd("k", a))
	<-inLog
	proposed := h.proposed
	second := applyAsync(t, h, lockCmd("k", b))
	waitInLine(t, h, second)
	// Another key goes straight to the log meanwhile.
	if !h.apply(t, lockCmd("other", b)).OK {
		t.Fatal("an acquire of another key failed")
	}
	close(resume)
	if res := <-first; !res.OK {
		t.Fatalf("first acquire: %+v", res)
	}
	if res := <-second; res.OK || res.Err != nil {
		t.Fatalf("second acquire: %+v, want a plain refusal", res)
	}
	if got := h.proposed - proposed; got != 2 {
		t.Fatalf("%d entries proposed, want 2: the first acquire and the other key's", got)
	}

	// The first in line fails (its session is gone): the one behind it
	// proposes and wins.
	h.apply(t, model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: a}})
	h.apply(t, model.Command{DestroySession: &model.DestroySession{ID: a}})
	inLog, resume = make(chan struct{}), make(chan struct{})
	h.before = func(cmd model.Command) {
		if cmd.KV != nil && cmd.KV.Key == "k" && cmd.KV.Session == a {
			h.before = nil
			close(inLog)
			<-resume
		}
	}
	failed := make(chan error)
	go func() {
		res, err := h.core.Apply(context.Background(), lockCmd("k", a))
		if err == nil && res.Err == nil {
			err = fmt.Errorf("acquire by a destroyed session answered %+v", res)
		}
		if res.Err != nil {
			err = nil
		}
		failed <- err
	}()
	<-inLog
	second = applyAsync(t, h, lockCmd("k", b))
	waitInLine(t, h, second)
	close(resume)
	if err := <-failed; err != nil {
		t.Fatal(err)
	}
	if res := <-second; !res.OK {
		t.Fatalf("acquire behind a failed one: %+v, want it to win", res)
	}
}

// applyAsync runs cmd through the core on a goroutine of its own and
// delivers its result; an error fails the test.
func applyAsync(t *testing.T, h *coreHarness, cmd model.Command) <-chan model.Result {
	out := make(chan model.Result, 1)
	go func() {
		res, err := h.core.Apply(context.Background(), cmd)
		if err != nil {
			t.Error(err)
		}
		out <- res
	}()
	return out
}

// waitInLine returns once an acquire is waiting in the core's line; an
// acquire that answers instead did not wait, which fails the test.
func waitInLine(t *testing.T, h *coreHarness, answered <-chan model.Result) {
	t.Helper()
	for h.core.line.waiting() == 0 {
		select {
		case res := <-answered:
			t.Fatalf("a second acquire of a key with one in flight answered %+v without waiting", res)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestLeaderCoreConfirmsOncePerAcquire: an acquire that confirmed
// leadership for a held key, found it released and then lost it to another
// acquire in flight is refused as soon as that one applies, without a
// second confirmation: another would wait for the next holder's release
// and race again, so one request could wait through any number of
// hand-offs (issue 37).
func TestLeaderCoreConfirmsOncePerAcquire(t *testing.T) {
	h := newCoreHarness(t, "a", "b", "c")
	a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	c := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	h.apply(t, lockCmd("k", a))

	inLog, resume := make(chan struct{}), make(chan struct{})
	var third <-chan model.Result
	h.beforeConfirm = func() {
		// While b's round runs, a lets go and c's acquire goes to the log.
		h.beforeConfirm = nil
		if _, err := h.propose(context.Background(), model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: a}}); err != nil {
			panic(err)
		}
		h.before = func(cmd model.Command) {
			if cmd.KV != nil && cmd.KV.Session == c {
				h.before = nil
				close(inLog)
				<-resume
			}
		}
		third = applyAsync(t, h, lockCmd("k", c))
		<-inLog
	}
	second := applyAsync(t, h, lockCmd("k", b))
	waitInLine(t, h, second)
	close(resume)
	if res := <-third; !res.OK {
		t.Fatalf("c's acquire: %+v", res)
	}
	res := <-second
	if res.OK || res.Err != nil || res.Index != h.index {
		t.Fatalf("b's acquire: %+v; want a plain refusal at index %d", res, h.index)
	}
	if h.confirms.Load() != 1 {
		t.Fatalf("b's acquire confirmed leadership %d times, want once", h.confirms.Load())
	}
}

// TestLeaderCoreWaitsForTheHolder: with WatchKey, an acquire of a held key
// waits for the holder to let go and then takes the key, instead of being
// refused just before it is free; without a change it is refused once
// HoldWait has passed, with no entry. In a bubble, so HoldWait is virtual.
func TestLeaderCoreWaitsForTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newCoreHarnessWith(t, true, "a", "b")
		a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		h.apply(t, lockCmd("k", a))

		proposed := h.proposed
		second := applyAsync(t, h, lockCmd("k", b))
		synctest.Wait()
		if h.watching("k") != 1 || len(second) != 0 {
			t.Fatalf("an acquire of a held key: %d watches, answered %v; want it waiting", h.watching("k"), len(second) != 0)
		}
		h.apply(t, model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: a}})
		if res := <-second; !res.OK {
			t.Fatalf("acquire of a key released while it waited: %+v, want it to win", res)
		}
		if got := h.proposed - proposed; got != 2 {
			t.Fatalf("%d entries, want 2: the release and the acquire", got)
		}

		// b holds it now and keeps it: a's acquire is refused after HoldWait.
		proposed = h.proposed
		start := time.Now()
		third := applyAsync(t, h, lockCmd("k", a))
		res := <-third
		if res.OK || res.Err != nil || res.Index != h.index {
			t.Fatalf("acquire of a key held throughout: %+v, want a plain refusal at index %d", res, h.index)
		}
		if waited := time.Since(start); waited != HoldWait || h.proposed != proposed {
			t.Fatalf("refused after %v with %d entries; want after HoldWait (%v), none", waited, h.proposed-proposed, HoldWait)
		}
	})
}
