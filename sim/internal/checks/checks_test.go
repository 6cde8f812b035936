package checks

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// tb builds synthetic traces: each helper appends an event at a given time.
type tb struct {
	ev    []core.Event
	clock time.Time
}

func newTB() *tb {
	b := &tb{clock: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	b.add(0, core.Event{Kind: core.KindRun, Run: &core.RunHeader{
		Clocks: map[string]core.ClockSkew{"n1": {Rate: 1}, "n2": {Rate: 1}},
		Bounds: core.Bounds{Invalidate: 60 * time.Second, Acquire: 80 * time.Second, DeadNode: 20 * time.Second},
	}})
	return b
}

func (b *tb) add(at time.Duration, e core.Event) {
	e.At, e.Seq = at, len(b.ev)
	b.ev = append(b.ev, e)
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func (b *tb) Leader(at time.Duration, server string, on bool) {
	b.add(at, core.Event{Kind: core.KindLeader, Node: server, Leader: &on})
}

// op records a call at a and its return at r (r < 0: never returned).
func (b *tb) op(a, r time.Duration, client string, c core.Call, ret core.Ret) {
	c.Op = len(b.ev) + 1000
	ret.Op = c.Op
	b.add(a, core.Event{Kind: core.KindCall, Node: client, Call: &c})
	if r >= 0 {
		if ret.Outcome == "" {
			ret.Outcome = core.OutOK
		}
		b.add(r, core.Event{Kind: core.KindRet, Node: client, Ret: &ret})
	}
}

func (b *tb) obs(at time.Duration, server string, leader bool, o core.StateObs) {
	o.Leader = leader
	o.Clock = b.clock.Add(at)
	b.add(at, core.Event{Kind: core.KindState, Node: server, State: &o})
}

// fault injects f from from until to (to <= 0: it never heals).
func (b *tb) fault(f *core.FaultMark, from, to time.Duration) {
	b.add(from, core.Event{Kind: core.KindFault, Fault: f})
	if to > 0 {
		b.add(to, core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: f.ID, Kind: f.Kind, Phase: "end"}})
	}
}

// end closes the run at at and returns its events in time order.
func (b *tb) end(at time.Duration) []core.Event {
	b.add(at, core.Event{Kind: core.KindNote, Msg: "end"})
	slices.SortStableFunc(b.ev, func(x, y core.Event) int { return cmp.Compare(x.At, y.At) })
	return b.ev
}

func (b *tb) fenced(at time.Duration, client, mode string, seq model.Sequencer, checkCall time.Duration) {
	b.add(at, core.Event{Kind: core.KindWrite, Node: client, Write: &core.ResWrite{Resource: core.ResFenced, Client: client, Mode: mode, Seq: seq, Accepted: true, CheckCall: checkCall}})
}

func entry(key, session string, li, create uint64) *model.KVEntry {
	return &model.KVEntry{Key: key, Session: session, LockIndex: li, CreateIndex: create, ModifyIndex: create}
}

func mustCheck(t *testing.T, name string, events []core.Event, wantViolations int) []Violation {
	t.Helper()
	vs, err := RunCheck(name, events)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != wantViolations {
		t.Fatalf("%s: got %d violations, want %d: %v", name, len(vs), wantViolations, vs)
	}
	for _, v := range vs {
		if v.Check != name || len(v.Clauses) == 0 {
			t.Fatalf("violation not labelled with its check and clauses: %+v", v)
		}
	}
	return vs
}

func TestCheckFencedToken(t *testing.T) {
	good := newTB()
	good.fenced(sec(1), "c1", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}, 0)
	good.fenced(sec(2), "c2", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 2, Session: "b"}, 0)
	good.fenced(sec(3), "c2", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 2, Session: "b"}, 0)
	mustCheck(t, CheckFenced, good.ev, 0)

	stale := newTB()
	stale.fenced(sec(1), "c2", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 2, Session: "b"}, 0)
	stale.fenced(sec(2), "c1", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}, 0)
	mustCheck(t, CheckFenced, stale.ev, 1)

	twice := newTB()
	twice.fenced(sec(1), "c1", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}, 0)
	twice.fenced(sec(2), "c2", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 1, Session: "b"}, 0)
	mustCheck(t, CheckFenced, twice.ev, 1)
}

func TestCheckFencedTxnAgainstTenures(t *testing.T) {
	mk := func(checkCall time.Duration) []core.Event {
		b := newTB()
		b.obs(sec(1), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", After: entry("k", "a", 1, 5)}}})
		b.obs(sec(5), "n1", true, core.StateObs{
			GoneSess: []model.Session{{ID: "a"}},
			Keys:     []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: entry("k", "", 1, 5)}}})
		b.fenced(sec(7), "c1", core.FenceTxn, model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}, checkCall)
		return b.ev
	}
	mustCheck(t, CheckFenced, mk(sec(4)), 0) // checked while valid, accepted later: fine
	vs := mustCheck(t, CheckFenced, mk(sec(6)), 1)
	if !strings.Contains(vs[0].Msg, "holding ended") {
		t.Fatalf("unexpected message: %v", vs[0])
	}
	never := newTB()
	never.obs(sec(1), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", After: entry("k", "a", 1, 5)}}})
	never.fenced(sec(2), "c9", core.FenceTxn, model.Sequencer{Key: "k", LockIndex: 7, Session: "zz"}, sec(1.5))
	mustCheck(t, CheckFenced, never.ev, 1)
}

func TestCheckSequencer(t *testing.T) {
	good := newTB()
	good.obs(sec(1), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", After: entry("k", "a", 1, 5)}}})
	good.obs(sec(2), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: entry("k", "", 1, 5)}}})
	good.obs(sec(3), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", Before: entry("k", "", 1, 5), After: entry("k", "b", 2, 5)}}})
	good.op(sec(3), sec(3.1), "c2", core.Call{Req: core.ReqGet, Key: "k"}, core.Ret{Found: true, Entries: []model.KVEntry{*entry("k", "b", 2, 5)}})
	mustCheck(t, CheckSequencer, good.ev, 0)

	// LockIndex not bumped: b acquires with a's index. Caught twice: the
	// server's change is not above what was issued, and (k,1) names two sessions.
	bad := newTB()
	bad.obs(sec(1), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", After: entry("k", "a", 1, 5)}}})
	bad.obs(sec(2), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: entry("k", "", 1, 5)}}})
	bad.obs(sec(3), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", Before: entry("k", "", 1, 5), After: entry("k", "b", 1, 5)}}})
	mustCheck(t, CheckSequencer, bad.ev, 2)

	// Client-observed only (no server observations): two sessions seen with index 1.
	cl := newTB()
	cl.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqTxn}, core.Ret{Entries: []model.KVEntry{*entry("k", "a", 1, 5)}})
	cl.op(sec(2), sec(2.1), "c2", core.Call{Req: core.ReqGet, Key: "k"}, core.Ret{Found: true, Entries: []model.KVEntry{*entry("k", "b", 1, 5)}})
	mustCheck(t, CheckSequencer, cl.ev, 1)

	down := newTB()
	down.obs(sec(1), "n1", true, core.StateObs{Keys: []core.KeyChange{{Key: "k", Before: entry("k", "", 4, 5), After: entry("k", "", 3, 5)}}})
	mustCheck(t, CheckSequencer, down.ev, 1)
}

func ttlTrace(invalidateAt time.Duration, renewAt time.Duration, destroyed bool) []core.Event {
	b := newTB()
	b.Leader(0, "n1", true)
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Server: "n1", Create: &model.CreateSession{TTL: "10s", Checks: []string{}}}, core.Ret{SessionID: "s1"})
	if renewAt > 0 {
		b.op(renewAt, renewAt+sec(0.1), "c1", core.Call{Req: core.ReqRenew, ID: "s1"}, core.Ret{})
	}
	if destroyed {
		b.op(sec(2), -1, "c1", core.Call{Req: core.ReqDestroy, ID: "s1"}, core.Ret{})
	}
	b.obs(invalidateAt, "n1", true, core.StateObs{GoneSess: []model.Session{{ID: "s1", TTL: "10s"}}})
	return b.ev
}

func TestCheckTTLLowerBound(t *testing.T) {
	mustCheck(t, CheckTTL, ttlTrace(sec(21), 0, false), 0)
	mustCheck(t, CheckTTL, ttlTrace(sec(10.5), 0, false), 1)       // 9.5s after create
	mustCheck(t, CheckTTL, ttlTrace(sec(15), sec(8), false), 1)    // 7s after a renew
	mustCheck(t, CheckTTL, ttlTrace(sec(5), 0, true), 0)           // destroyed, not TTL
	mustCheck(t, CheckTTL, ttlTrace(sec(29), sec(8), false), 0)    // 21s after the renew
	mustCheck(t, CheckTTL, ttlTrace(sec(12), sec(11.5), false), 1) // renew just before

	// Its node deregistered (S10): not a TTL expiry, however early. The
	// same early invalidation by a destroy entry nobody asked for is one.
	byEntry := func(command string) []core.Event {
		ev := ttlTrace(sec(5), 0, false)
		ev[len(ev)-1].State.Command = command
		return ev
	}
	mustCheck(t, CheckTTL, byEntry("deregister"), 0)
	mustCheck(t, CheckTTL, byEntry("destroy-session"), 1)

	// S18 is measured on the leader's own clock: a wall-clock step counts.
	stepped := func(inv, by time.Duration) []core.Event {
		ev := ttlTrace(inv, 0, false)
		ev[0].Run.Faults = []core.Fault{{ID: 7, Kind: core.FaultServerClockStep, Param: by}}
		b := &tb{ev: ev}
		b.add(sec(5), core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 7, Kind: core.FaultServerClockStep, Phase: "start", Targets: []string{"n1"}, Note: "wall clock step " + by.String()}})
		b.add(sec(40), core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 7, Kind: core.FaultServerClockStep, Phase: "end"}})
		slices.SortStableFunc(b.ev, func(x, y core.Event) int { return cmp.Compare(x.At, y.At) })
		return b.ev
	}
	mustCheck(t, CheckTTL, stepped(sec(10.5), 5*time.Second), 0) // 9.5s + 5s on n1's clock
	mustCheck(t, CheckTTL, stepped(sec(21), -15*time.Second), 1) // 20s - 15s on n1's clock

	// A new leader must wait a full TTL from its own election (S21).
	b := newTB()
	b.Leader(0, "n1", true)
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{TTL: "10s"}}, core.Ret{SessionID: "s1"})
	b.Leader(sec(20), "n1", false)
	b.Leader(sec(22), "n2", true)
	b.obs(sec(25), "n2", true, core.StateObs{GoneSess: []model.Session{{ID: "s1", TTL: "10s"}}})
	mustCheck(t, CheckTTL, b.ev, 1)
}

func lockDelayTrace(gapLeader, gapFollower time.Duration, delay time.Duration) []core.Event {
	b := newTB()
	sA := model.Session{ID: "a", LockDelay: delay}
	released := entry("k", "", 1, 5)
	released.ModifyIndex = 9
	inv := core.StateObs{Index: 9, GoneSess: []model.Session{sA}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: released}}}
	acquired := entry("k", "b", 2, 5)
	acquired.ModifyIndex = 10
	acq := core.StateObs{Index: 10, Keys: []core.KeyChange{{Key: "k", Before: released, After: acquired}}}
	b.obs(sec(10), "n1", true, inv)
	b.obs(sec(10.01), "n2", false, inv)
	b.obs(sec(10)+gapLeader, "n1", true, acq)
	b.obs(sec(10.01)+gapFollower, "n2", false, acq)
	return b.ev
}

func TestCheckLockDelay(t *testing.T) {
	mustCheck(t, CheckLockDelay, lockDelayTrace(sec(15), sec(14.99), 15*time.Second), 0)
	// A lagging follower applying the acquire right after the
	// invalidation is not a violation: the accepting leader's clock decides.
	mustCheck(t, CheckLockDelay, lockDelayTrace(sec(16), sec(0.001), 15*time.Second), 0)
	mustCheck(t, CheckLockDelay, lockDelayTrace(sec(1), sec(1), 15*time.Second), 1)
	mustCheck(t, CheckLockDelay, lockDelayTrace(sec(1), sec(1), 0), 0)
	// An explicit release (index 8) before the session's removal (9) arms
	// nothing, so a quick acquire is fine.
	b := newTB()
	rel := entry("k", "", 1, 5)
	rel.ModifyIndex = 8
	b.obs(sec(3), "n2", false, core.StateObs{Index: 8, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: rel}}})
	b.obs(sec(3), "n2", false, core.StateObs{Index: 9, GoneSess: []model.Session{{ID: "a", LockDelay: 15 * time.Second}}})
	acquired := entry("k", "b", 2, 5)
	acquired.ModifyIndex = 10
	b.obs(sec(3.5), "n2", false, core.StateObs{Index: 10, Keys: []core.KeyChange{{Key: "k", Before: rel, After: acquired}}})
	mustCheck(t, CheckLockDelay, b.ev, 0)

	// The leader that accepted the acquire decides: a follower that armed
	// late (it lagged) may see a long gap, the leader a short one.
	ev := lockDelayTrace(sec(1), sec(16), 15*time.Second)
	mustCheck(t, CheckLockDelay, ev, 1)
	// A restart's replay re-arms: measured from the replay, the leader's
	// gap is short although its first apply was long before.
	b = newTB()
	sA := model.Session{ID: "a", LockDelay: 15 * time.Second}
	released := entry("k", "", 1, 5)
	released.ModifyIndex = 9
	b.obs(sec(10), "n1", true, core.StateObs{Index: 9, GoneSess: []model.Session{sA}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: released}}})
	b.obs(sec(30), "n1", false, core.StateObs{Index: 9, Incarnation: 1, Replay: true, Keys: []core.KeyChange{{Key: "k", After: released}}})
	b.obs(sec(31), "n1", true, core.StateObs{Index: 10, Incarnation: 1, Keys: []core.KeyChange{{Key: "k", Before: released, After: acquired}}})
	mustCheck(t, CheckLockDelay, b.ev, 1)
}

// lockDelayTermTrace is seed 3640's shape: n1, leader of term 2, applies
// the invalidation (index 9) and accepts the acquire (index 10), both
// proposed in term 2; n3 lags, becomes leader of term 3 and applies both
// entries late. n1 applies the acquire gap1 after its invalidation, as
// leader or (n1Led false) having just stepped down; n3 gap3 after its own.
func lockDelayTermTrace(gap1 time.Duration, n1Led bool, gap3 time.Duration) []core.Event {
	b := newTB()
	sA := model.Session{ID: "a", LockDelay: 15 * time.Second}
	released := entry("k", "", 1, 5)
	released.ModifyIndex = 9
	inv := core.StateObs{Index: 9, Term: 2, GoneSess: []model.Session{sA}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: released}}}
	acquired := entry("k", "b", 2, 5)
	acquired.ModifyIndex = 10
	acq := core.StateObs{Index: 10, Term: 2, Keys: []core.KeyChange{{Key: "k", Before: released, After: acquired}}}
	inv1 := inv
	inv1.LeaderTerm = 2
	b.obs(sec(10), "n1", true, inv1)
	b.obs(sec(20), "n3", false, inv)
	acq1 := acq
	if n1Led {
		acq1.LeaderTerm = 2
	}
	acq3 := acq
	acq3.LeaderTerm = 3
	b.obs(sec(10)+gap1, "n1", n1Led, acq1)
	b.obs(sec(20)+gap3, "n3", true, acq3)
	return b.ev
}

// TestCheckLockDelayProposerDecides: only the leader of the acquire's own
// term accepted it, so a later term's leader applying it does not decide.
func TestCheckLockDelayProposerDecides(t *testing.T) {
	// Seed 3640: n1 stepped down before the acquire committed, n3 led term
	// 3 and applied it 4.8 s after its late arming. No proposer apply, so
	// every gap must be short, and n1's is not.
	mustCheck(t, CheckLockDelay, lockDelayTermTrace(sec(16), false, sec(4.8)), 0)
	// n1 applied it as term-2 leader with a long enough gap.
	mustCheck(t, CheckLockDelay, lockDelayTermTrace(sec(16), true, sec(4.8)), 0)
	// The proposer was too soon: caught, whatever n3's gap.
	mustCheck(t, CheckLockDelay, lockDelayTermTrace(sec(1), true, sec(4.8)), 1)
	mustCheck(t, CheckLockDelay, lockDelayTermTrace(sec(1), true, sec(16)), 1)
	// No proposer apply and every gap short: caught.
	mustCheck(t, CheckLockDelay, lockDelayTermTrace(sec(1), false, sec(4.8)), 1)
}

func TestCheckBehaviour(t *testing.T) {
	rel := model.Session{ID: "a", Behavior: model.BehaviorRelease}
	del := model.Session{ID: "d", Behavior: model.BehaviorDelete}
	at := func(e *model.KVEntry, idx uint64) *model.KVEntry { e.ModifyIndex = idx; return e }
	good := newTB()
	good.obs(sec(1), "n1", true, core.StateObs{Index: 10, GoneSess: []model.Session{rel}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 3, 5), After: at(entry("k", "", 3, 5), 10)}}})
	good.obs(sec(2), "n1", true, core.StateObs{Index: 11, GoneSess: []model.Session{del}, Keys: []core.KeyChange{{Key: "j", Before: entry("j", "d", 1, 6), DeletedAt: 11}}})
	// The client released (index 12), then destroyed (13): each is its
	// own entry, and the destroy finds nothing left to release.
	good.obs(sec(3), "n2", false, core.StateObs{Index: 12, Keys: []core.KeyChange{{Key: "j", Before: entry("j", "d", 1, 6), After: at(entry("j", "", 1, 6), 12)}}})
	good.obs(sec(3), "n2", false, core.StateObs{Index: 13, GoneSess: []model.Session{del}})
	mustCheck(t, CheckBehaviour, good.ev, 0)

	bad := newTB()
	bad.obs(sec(1), "n1", true, core.StateObs{Index: 10, GoneSess: []model.Session{rel}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 3, 5), After: at(entry("k", "", 4, 5), 10)}}})
	bad.obs(sec(2), "n1", true, core.StateObs{Index: 11, GoneSess: []model.Session{del}, Keys: []core.KeyChange{{Key: "j", Before: entry("j", "d", 1, 6), After: at(entry("j", "", 1, 6), 11)}}})
	// A release that re-creates the key (new CreateIndex) is no release.
	bad.obs(sec(2.5), "n1", true, core.StateObs{Index: 20, GoneSess: []model.Session{rel}, Keys: []core.KeyChange{{Key: "k", Before: entry("k", "a", 3, 5), After: at(entry("k", "", 3, 20), 20)}}})
	bad.obs(sec(3), "n1", true, core.StateObs{Index: 12, GoneSess: []model.Session{{ID: "x"}}, Orphans: []string{"m"}})
	bad.obs(sec(4), "n1", true, core.StateObs{Index: 13, GoneSess: []model.Session{{ID: "r2", Behavior: model.BehaviorRelease}}, Keys: []core.KeyChange{{Key: "q", Before: entry("q", "r2", 1, 9), DeletedAt: 13}}})
	mustCheck(t, CheckBehaviour, bad.ev, 5)

	// A snapshot restore spans many entries: it says nothing about which
	// of them released or deleted a key.
	restored := newTB()
	restored.obs(sec(4), "n1", false, core.StateObs{Index: 13, Restored: true, Replay: true, GoneSess: []model.Session{{ID: "r2", Behavior: model.BehaviorRelease}},
		Keys: []core.KeyChange{{Key: "q", Before: entry("q", "r2", 1, 9), DeletedAt: 13}}})
	mustCheck(t, CheckBehaviour, restored.ev, 0)
}

func durableTrace(final string, found bool, extra bool) []core.Event {
	b := newTB()
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "kv/a", Value: []byte("v1")}}, core.Ret{OK: true})
	b.op(sec(2), sec(2.1), "c2", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "kv/a", Value: []byte("v2")}}, core.Ret{OK: true})
	if extra {
		b.op(sec(2.05), -1, "c3", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "kv/a", Value: []byte("v3")}}, core.Ret{})
	}
	ret := core.Ret{Found: found}
	if found {
		ret.Entries = []model.KVEntry{{Key: "kv/a", Value: []byte(final)}}
	}
	b.op(sec(50), sec(50.1), core.FinalClient, core.Call{Req: core.ReqGet, Key: "kv/a"}, ret)
	return b.ev
}

func TestCheckDurable(t *testing.T) {
	mustCheck(t, CheckDurable, durableTrace("v2", true, false), 0)
	mustCheck(t, CheckDurable, durableTrace("v1", true, false), 1)
	mustCheck(t, CheckDurable, durableTrace("", false, false), 1)
	// An overlapping write of unknown outcome makes the last value ambiguous.
	mustCheck(t, CheckDurable, durableTrace("v3", true, true), 0)
	mustCheck(t, CheckDurable, durableTrace("v1", true, true), 0)
	// So does one its client gave up on before the last write was sent
	// (sim seed 3889: a timed-out set landed 6 s later, after an
	// acknowledged one); one that definitely failed does not.
	for _, c := range []struct {
		outcome core.Outcome
		final   string
		want    int
	}{{core.OutUnknown, "v3", 0}, {core.OutUnknown, "v2", 0}, {core.OutFail, "v3", 1}, {core.OutFail, "v2", 0}} {
		b := newTB()
		b.op(sec(1), sec(1.1), "c3", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "kv/a", Value: []byte("v3")}}, core.Ret{Outcome: c.outcome})
		b.op(sec(2), sec(2.1), "c2", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "kv/a", Value: []byte("v2")}}, core.Ret{OK: true})
		b.op(sec(50), sec(50.1), core.FinalClient, core.Call{Req: core.ReqGet, Key: "kv/a"}, core.Ret{Found: true, Entries: []model.KVEntry{{Key: "kv/a", Value: []byte(c.final)}}})
		mustCheck(t, CheckDurable, b.ev, c.want)
	}
}

func TestCheckLiveness(t *testing.T) {
	mk := func(goneAt, acquiredAt time.Duration) []core.Event {
		b := newTB()
		b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Server: "n1", Create: &model.CreateSession{TTL: "10s"}}, core.Ret{SessionID: "s1"})
		b.add(sec(10), core.Event{Kind: core.KindNote, Msg: core.NoteLiveness})
		if goneAt > 0 {
			b.obs(goneAt, "n1", true, core.StateObs{GoneSess: []model.Session{{ID: "s1", TTL: "10s"}}})
		}
		lock := core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVLock, Key: "lock/x", Session: "p"}}
		b.op(sec(11), sec(11.1), core.ProberClient, lock, core.Ret{OK: false})
		if acquiredAt > 0 {
			b.op(acquiredAt, acquiredAt+sec(0.1), core.ProberClient, lock, core.Ret{OK: true})
		}
		b.add(sec(200), core.Event{Kind: core.KindNote, Msg: "end"})
		return b.ev
	}
	mustCheck(t, CheckLiveness, mk(sec(30), sec(40)), 0)
	mustCheck(t, CheckLiveness, mk(0, sec(40)), 1)       // TTL session never invalidated
	mustCheck(t, CheckLiveness, mk(sec(30), 0), 1)       // key never acquired
	mustCheck(t, CheckLiveness, mk(sec(30), sec(95)), 1) // acquired too late

	// A crashed server's serf-bound sessions must go within DeadNode.
	dn := func(goneAt time.Duration) []core.Event {
		b := newTB()
		b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Server: "n2", Create: &model.CreateSession{Checks: []string{"serfHealth"}}}, core.Ret{SessionID: "s2"})
		b.add(sec(5), core.Event{Kind: core.KindNote, Msg: core.NoteCrashPrefix + "n2"})
		if goneAt > 0 {
			b.obs(goneAt, "n1", true, core.StateObs{GoneSess: []model.Session{{ID: "s2"}}})
		}
		b.add(sec(60), core.Event{Kind: core.KindNote, Msg: core.NoteRestartPrefix + "n2"})
		return b.ev
	}
	mustCheck(t, CheckLiveness, dn(sec(15)), 0)
	mustCheck(t, CheckLiveness, dn(0), 1)
}

func TestTraceRoundTrip(t *testing.T) {
	ev := lockDelayTrace(sec(1), sec(1), 15*time.Second)
	var buf bytes.Buffer
	if err := core.WriteJSONL(&buf, ev); err != nil {
		t.Fatal(err)
	}
	back, err := core.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if core.Digest(back) != core.Digest(ev) {
		t.Fatal("digest changed across a JSON round trip")
	}
	mustCheck(t, CheckLockDelay, back, 1)
	if _, err := core.ReadJSONL(strings.NewReader("{\"seq\":1}\n{bad")); err == nil {
		t.Fatal("bad JSON line accepted")
	}
}

// TestRegistryRows: each row names its clauses and what it checks, applies
// to some run, and no name is registered twice for the same kind of run.
func TestRegistryRows(t *testing.T) {
	seen := map[string]runKind{}
	for _, c := range registry {
		if len(c.clauses) == 0 || c.what == "" || c.unit == "" || c.runs == 0 || c.fn == nil {
			t.Errorf("%s: incomplete row %+v", c.Name, c)
		}
		if seen[c.Name]&c.runs != 0 {
			t.Errorf("%s: registered twice for the same kind of run", c.Name)
		}
		seen[c.Name] |= c.runs
	}
}

// TestCheckHealthyLinks (S53): a serfHealth going critical needs a fault
// on the pool's links at the time or within Detect+Slack after it ended
// (any node for a network, server or client-host fault, only its target
// for the injected false positive or a killed agent); one with healthy
// links, long after a fault, or during a fault that touches no pool link,
// is a false positive.
func TestCheckHealthyLinks(t *testing.T) {
	critical := func(idx uint64) core.StateObs {
		return core.StateObs{Index: idx, Checks: map[string]model.Health{"n2/serfHealth": model.HealthCritical}}
	}
	trace := func(kind core.FaultKind, faultStart, faultEnd, markAt time.Duration, target string) []core.Event {
		b := newTB()
		b.ev[0].Run.Bounds.Detect, b.ev[0].Run.Bounds.Slack = 10*time.Second, 5*time.Second
		if kind != "" {
			b.add(faultStart, core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: kind, Phase: "start", Targets: []string{target}}})
			if faultEnd > 0 {
				b.add(faultEnd, core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: kind, Phase: "end"}})
			}
		}
		b.obs(markAt, "n1", true, critical(9))
		b.obs(markAt+sec(0.01), "n3", false, critical(9)) // the same entry, applied elsewhere
		return b.ev
	}
	mustCheck(t, CheckHealthyLinks, trace("", 0, 0, sec(30), ""), 1)                                   // no fault at all
	mustCheck(t, CheckHealthyLinks, trace(core.FaultCrashRestart, sec(20), sec(25), sec(30), "n2"), 0) // after n2's crash
	mustCheck(t, CheckHealthyLinks, trace(core.FaultLeaderIsolation, sec(20), sec(25), sec(22), "n1"), 0)
	mustCheck(t, CheckHealthyLinks, trace(core.FaultCrashRestart, sec(20), 0, sec(60), "n2"), 0)       // never healed
	mustCheck(t, CheckHealthyLinks, trace(core.FaultCrashRestart, sec(20), sec(25), sec(45), "n2"), 1) // long after the heal
	mustCheck(t, CheckHealthyLinks, trace(core.FaultCrashRestart, sec(20), sec(25), sec(10), "n2"), 1) // before the fault
	mustCheck(t, CheckHealthyLinks, trace(core.FaultSlowLink, sec(20), sec(25), sec(22), "c-1"), 1)    // no pool link touched
	mustCheck(t, CheckHealthyLinks, trace(core.FaultClientPause, sec(20), sec(25), sec(22), "c-1"), 0) // a paused host's stale view
	mustCheck(t, CheckHealthyLinks, trace(core.FaultFalsePositive, sec(20), sec(25), sec(22), "n2"), 0)
	mustCheck(t, CheckHealthyLinks, trace(core.FaultFalsePositive, sec(20), sec(25), sec(22), "n3"), 1) // another node's
	// Client agents: a killed agent excuses only itself, for good; a slow
	// agent excuses every node while it lasts and Detect+Slack after.
	agentTrace := func(kind core.FaultKind, targets []string, node string, markAt time.Duration) []core.Event {
		b := newTB()
		b.ev[0].Run.Agents = []string{"agent1", "agent2"}
		b.ev[0].Run.Bounds.Detect, b.ev[0].Run.Bounds.Slack = 10*time.Second, 5*time.Second
		b.add(sec(20), core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: kind, Phase: "start", Targets: targets}})
		b.add(sec(21), core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: kind, Phase: "end"}})
		b.obs(markAt, "n1", true, core.StateObs{Index: 9, Checks: map[string]model.Health{node + "/serfHealth": model.HealthCritical}})
		return b.ev
	}
	crash := []string{"c-1", "agent1"}
	mustCheck(t, CheckHealthyLinks, agentTrace(core.FaultClientCrash, crash, "agent1", sec(90)), 0)
	mustCheck(t, CheckHealthyLinks, agentTrace(core.FaultClientCrash, crash, "agent2", sec(25)), 1)
	mustCheck(t, CheckHealthyLinks, agentTrace(core.FaultSlowAgent, []string{"agent1"}, "agent2", sec(30)), 0)
	mustCheck(t, CheckHealthyLinks, agentTrace(core.FaultSlowAgent, []string{"agent1"}, "agent1", sec(40)), 1)
	// A suspicion begun during a fault may end StaleView after the heal.
	stale := func(markAt time.Duration) []core.Event {
		ev := agentTrace(core.FaultClientPartition, []string{"c-1", "agent1"}, "agent2", markAt)
		ev[0].Run.Bounds.StaleView = 30 * time.Second
		return ev
	}
	mustCheck(t, CheckHealthyLinks, stale(sec(21+25)), 0)
	mustCheck(t, CheckHealthyLinks, stale(sec(21+36)), 1)
	// A critical mark replayed after a restart says nothing about when.
	b := newTB()
	replayed := critical(9)
	replayed.Replay = true
	b.obs(sec(30), "n1", false, replayed)
	mustCheck(t, CheckHealthyLinks, b.ev, 0)
}

// TestCheckFalseDeadFenced (S43, S53): once a live holder's node is marked
// critical, a fenced write with its sequencer whose check was sent after
// that, or below a lock index the resource already accepted, must be
// refused; a holder whose agent was killed first is not a false positive.
func TestCheckFalseDeadFenced(t *testing.T) {
	seqA := model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}
	mk := func(crashAt time.Duration, write func(b *tb)) []core.Event {
		b := newTB()
		b.ev[0].Run.Agents = []string{"agent1"}
		b.obs(sec(1), "n1", true, core.StateObs{Index: 5,
			NewSess: []model.Session{{ID: "a", Node: "agent1", Checks: []string{model.SerfHealthCheckID}, CreateIndex: 5}},
			Keys:    []core.KeyChange{{Key: "k", After: entry("k", "a", 1, 5)}}})
		if crashAt > 0 {
			b.add(crashAt, core.Event{Kind: core.KindNote, Node: "agent1", Msg: core.NoteCrashPrefix + "agent1"})
		}
		b.obs(sec(5), "n1", true, core.StateObs{Index: 9,
			Checks:   map[string]model.Health{"agent1/serfHealth": model.HealthCritical},
			GoneSess: []model.Session{{ID: "a", Node: "agent1", Checks: []string{model.SerfHealthCheckID}, CreateIndex: 5}},
			Keys:     []core.KeyChange{{Key: "k", Before: entry("k", "a", 1, 5), After: entry("k", "", 1, 5)}}})
		write(b)
		return b.ev
	}
	late := func(b *tb) { b.fenced(sec(7), "c-1", core.FenceTxn, seqA, sec(6)) }
	mustCheck(t, CheckFalseDeadFenced, mk(0, late), 1)
	mustCheck(t, CheckFalseDeadFenced, mk(sec(3), late), 0) // killed: a true positive
	mustCheck(t, CheckFalseDeadFenced, mk(0, func(b *tb) { b.fenced(sec(7), "c-1", core.FenceTxn, seqA, sec(4)) }), 0)
	mustCheck(t, CheckFalseDeadFenced, mk(0, func(b *tb) {
		b.add(sec(7), core.Event{Kind: core.KindWrite, Node: "c-1", Write: &core.ResWrite{Resource: core.ResFenced, Client: "c-1", Mode: core.FenceTxn, Seq: seqA, CheckCall: sec(6), Reason: "check-sequencer: invalid session"}})
	}), 0) // refused, as it must be
	mustCheck(t, CheckFalseDeadFenced, mk(0, func(b *tb) {
		b.fenced(sec(6), "c-2", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 2, Session: "b"}, 0)
		b.fenced(sec(7), "c-1", core.FenceToken, seqA, 0)
	}), 1)
	mustCheck(t, CheckFalseDeadFenced, mk(0, func(b *tb) { b.fenced(sec(7), "c-1", core.FenceToken, seqA, 0) }), 0) // no later holder wrote yet
}

// TestCheckDeadHolderInvalidated (S12, S53): a killed agent's (or a host
// paused past the bound's) serfHealth-bound sessions must be gone within
// Bounds.DeadAgent; a run that ends before the bound says nothing.
func TestCheckDeadHolderInvalidated(t *testing.T) {
	sess := model.Session{ID: "a", Node: "agent1", Checks: []string{model.SerfHealthCheckID}, CreateIndex: 5}
	mk := func(stop func(b *tb), goneAt, end time.Duration) []core.Event {
		b := newTB()
		b.ev[0].Run.Agents = []string{"agent1"}
		b.ev[0].Run.Bounds.DeadAgent = 40 * time.Second
		b.obs(sec(1), "n1", true, core.StateObs{Index: 5, NewSess: []model.Session{sess}})
		stop(b)
		if goneAt > 0 {
			b.obs(goneAt, "n1", true, core.StateObs{Index: 20, GoneSess: []model.Session{sess}})
		}
		b.add(end, core.Event{Kind: core.KindNote, Msg: "end"})
		return b.ev
	}
	kill := func(b *tb) {
		b.add(sec(10), core.Event{Kind: core.KindNote, Node: "agent1", Msg: core.NoteCrashPrefix + "agent1"})
	}
	pause := func(d time.Duration) func(b *tb) {
		return func(b *tb) {
			b.add(sec(10), core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: core.FaultClientPause, Phase: "start", Targets: []string{"c-1", "agent1"}}})
			b.add(sec(10)+d, core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: core.FaultClientPause, Phase: "end"}})
		}
	}
	mustCheck(t, CheckDeadHolder, mk(kill, sec(30), sec(100)), 0)
	mustCheck(t, CheckDeadHolder, mk(kill, sec(60), sec(100)), 1) // too late
	mustCheck(t, CheckDeadHolder, mk(kill, 0, sec(100)), 1)       // never
	mustCheck(t, CheckDeadHolder, mk(kill, 0, sec(40)), 0)        // the run ended first
	mustCheck(t, CheckDeadHolder, mk(pause(60*time.Second), 0, sec(100)), 1)
	mustCheck(t, CheckDeadHolder, mk(pause(20*time.Second), 0, sec(100)), 0) // back before the bound
}

// TestGossipTradeoff: the gossip rows measure from a host's stop to its
// session's removal per configuration (never for one that stays), and
// count false criticals and lost sessions under a condition.
func TestGossipTradeoff(t *testing.T) {
	serf := model.Session{ID: "s", Node: "agent1", Checks: []string{model.SerfHealthCheckID}, CreateIndex: 5}
	ttl := model.Session{ID: "t", Node: "agent1", TTL: "10s", CreateIndex: 6}
	none := model.Session{ID: "n", Node: "agent1", CreateIndex: 7}
	other := model.Session{ID: "o", Node: "agent2", Checks: []string{model.SerfHealthCheckID}, CreateIndex: 8}
	b := newTB()
	b.ev[0].Run.Agents = []string{"agent1", "agent2"}
	b.obs(sec(1), "n1", true, core.StateObs{Index: 8, NewSess: []model.Session{serf, ttl, none, other}})
	b.add(sec(10), core.Event{Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: core.FaultClientCrash, Phase: "start", Targets: []string{"h-1", "agent1"}}})
	b.obs(sec(16.5), "n1", true, core.StateObs{Index: 9, Checks: map[string]model.Health{"agent1/serfHealth": model.HealthCritical}, GoneSess: []model.Session{serf}})
	b.obs(sec(25), "n1", true, core.StateObs{Index: 10, GoneSess: []model.Session{ttl}})
	b.obs(sec(30), "n1", true, core.StateObs{Index: 11, Checks: map[string]model.Health{"agent2/serfHealth": model.HealthCritical}, GoneSess: []model.Session{other}})
	tr := NewGossipTradeoff()
	tr.AddDetection(b.ev)
	tr.AddLoss("loss 5%", b.ev, sec(20), sec(40))
	var out bytes.Buffer
	tr.Print(&out)
	for _, want := range []string{
		"client-crash       none        1         -         -         -         -      1",
		"client-crash       serf        1      6.5s      6.5s      6.5s      6.5s      0",
		"client-crash       ttl         1       15s       15s       15s       15s      0",
		// From 20 s: agent2's critical (agent1's came before), the TTL
		// session and agent2's lost; the serf one was gone already.
		"loss 5%              1         0.01          1          1/1          1/1          0/1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCheckFalseDeadFencedAgentCheck (S43, S56): the same fencing holds
// when the check that went critical under a live holder is an agent TTL
// check its session is bound to, not serfHealth.
func TestCheckFalseDeadFencedAgentCheck(t *testing.T) {
	seqA := model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}
	sess := model.Session{ID: "a", Node: "agent1", NodeChecks: []string{core.AgentCheckID}, CreateIndex: 5}
	mk := func(check string, checkCall time.Duration) []core.Event {
		b := newTB()
		b.ev[0].Run.Agents = []string{"agent1"}
		b.obs(sec(1), "n1", true, core.StateObs{Index: 5, NewSess: []model.Session{sess},
			Keys: []core.KeyChange{{Key: "k", After: entry("k", "a", 1, 5)}}})
		b.obs(sec(5), "n1", true, core.StateObs{Index: 9,
			Checks: map[string]model.Health{"agent1/" + check: model.HealthCritical}})
		b.fenced(sec(7), "c-1", core.FenceTxn, seqA, checkCall)
		return b.ev
	}
	mustCheck(t, CheckFalseDeadFenced, mk(core.AgentCheckID, sec(6)), 1) // accepted after the lapse
	mustCheck(t, CheckFalseDeadFenced, mk(core.AgentCheckID, sec(4)), 0) // checked before it
	mustCheck(t, CheckFalseDeadFenced, mk("other", sec(6)), 0)           // a check the session is not bound to
}

// TestCheckQueryBound (S58): a query left bound to a removed session after
// any entry is a violation; one deleted in the invalidating entry is not.
func TestCheckQueryBound(t *testing.T) {
	sess := model.Session{ID: "a", Node: "agent1"}
	good := newTB()
	good.obs(sec(1), "n1", true, core.StateObs{Index: 5, NewSess: []model.Session{sess}})
	good.obs(sec(5), "n1", true, core.StateObs{Index: 9, GoneSess: []model.Session{sess}, GoneQueries: map[string]string{"q1": "a"}})
	mustCheck(t, CheckQueryBound, good.ev, 0)

	late := newTB()
	late.obs(sec(1), "n1", true, core.StateObs{Index: 5, NewSess: []model.Session{sess}})
	late.obs(sec(5), "n1", true, core.StateObs{Index: 9, GoneSess: []model.Session{sess}, QueryOrphans: []string{"q1"}})
	late.obs(sec(6), "n1", true, core.StateObs{Index: 10, GoneQueries: map[string]string{"q1": "a"}})
	vs := mustCheck(t, CheckQueryBound, late.ev, 1)
	if !strings.Contains(vs[0].Msg, "q1") {
		t.Fatalf("unexpected message: %v", vs[0])
	}
}

// TestCheckAgentCheckExpiry (S12, S56): a session bound to an agent TTL
// check whose client stopped passing must be gone within the quiet bound
// (no fault in the way) or the fault-stretched one; a pass that revives
// the check first, a run that ends first and a fault that never heals ask
// nothing.
func TestCheckAgentCheckExpiry(t *testing.T) {
	sess := model.Session{ID: "a", Node: "agent1", NodeChecks: []string{model.SerfHealthCheckID, core.AgentCheckID}, CreateIndex: 5}
	ttl := 10 * time.Second
	type opt struct {
		goneAt, nextPass, end time.Duration
		fault                 *core.FaultMark
		faultFrom, faultTo    time.Duration
	}
	mk := func(o opt) []core.Event {
		b := newTB()
		h := b.ev[0].Run
		h.Agents = []string{"agent1"}
		h.Clients = []core.ClientInfo{{Name: "c-1", Group: "g", Agent: "agent1"}}
		h.Groups = map[string]core.GroupInfo{"g": {Config: core.SessionConfig{Checks: core.ChecksSerf, AgentCheck: ttl}}}
		h.Bounds.AgentCheckTTL, h.Bounds.AgentSync, h.Bounds.AgentSyncQuiet = ttl, 31*time.Second, time.Second
		h.Bounds.Election, h.Bounds.Slack = 10*time.Second, 5*time.Second
		b.op(sec(1), sec(1), "c-1", core.Call{Req: core.ReqCheckRegister, ID: core.AgentCheckID}, core.Ret{})
		b.obs(sec(2), "n1", true, core.StateObs{Index: 5, NewSess: []model.Session{sess}})
		b.op(sec(3), sec(3), "c-1", core.Call{Req: core.ReqCheckPass, ID: core.AgentCheckID}, core.Ret{})
		if o.fault != nil {
			b.fault(o.fault, o.faultFrom, o.faultTo)
		}
		if o.goneAt > 0 {
			b.obs(o.goneAt, "n1", true, core.StateObs{Index: 20, GoneSess: []model.Session{sess},
				Checks: map[string]model.Health{"agent1/" + core.AgentCheckID: model.HealthCritical}})
		}
		if o.nextPass > 0 {
			b.op(o.nextPass, o.nextPass, "c-1", core.Call{Req: core.ReqCheckPass, ID: core.AgentCheckID}, core.Ret{})
		}
		return b.end(o.end)
	}
	// Expiry at 13 s; quiet deadline 13 + 1 + 5 = 19 s.
	mustCheck(t, CheckAgentExpiry, mk(opt{goneAt: sec(14), end: sec(100)}), 0)
	mustCheck(t, CheckAgentExpiry, mk(opt{goneAt: sec(25), end: sec(100)}), 1)  // too late with no fault in the way
	mustCheck(t, CheckAgentExpiry, mk(opt{end: sec(100)}), 1)                   // never
	mustCheck(t, CheckAgentExpiry, mk(opt{nextPass: sec(16), end: sec(31)}), 0) // revived before the deadline (its own expiry at 26 s is judged at 32 s)
	mustCheck(t, CheckAgentExpiry, mk(opt{end: sec(18)}), 0)                    // the run ended first
	// The leader is killed over the expiry: deadline 20 + 10 + 31 + 5 = 66 s.
	kill := &core.FaultMark{ID: 1, Kind: core.FaultLeaderKill, Phase: "start", Targets: []string{"n1"}}
	mustCheck(t, CheckAgentExpiry, mk(opt{goneAt: sec(60), end: sec(100), fault: kill, faultFrom: sec(12), faultTo: sec(20)}), 0)
	mustCheck(t, CheckAgentExpiry, mk(opt{goneAt: sec(70), end: sec(100), fault: kill, faultFrom: sec(12), faultTo: sec(20)}), 1)
	// The host crashed with its agent: the check never goes critical.
	crash := &core.FaultMark{ID: 1, Kind: core.FaultClientCrash, Phase: "start", Targets: []string{"c-1", "agent1"}}
	mustCheck(t, CheckAgentExpiry, mk(opt{end: sec(100), fault: crash, faultFrom: sec(5)}), 0)
	// Its end mark a second later closes the injection, not the crash.
	mustCheck(t, CheckAgentExpiry, mk(opt{end: sec(100), fault: crash, faultFrom: sec(5), faultTo: sec(6)}), 0)
	// A pause of the same host heals at its end: the check must then expire.
	pause := &core.FaultMark{ID: 1, Kind: core.FaultClientPause, Phase: "start", Targets: []string{"c-1", "agent1"}}
	mustCheck(t, CheckAgentExpiry, mk(opt{end: sec(100), fault: pause, faultFrom: sec(5), faultTo: sec(6)}), 1)
	// Only the process crashed: the agent runs on, the check must expire.
	proc := &core.FaultMark{ID: 1, Kind: core.FaultClientCrash, Phase: "start", Targets: []string{"c-1"}}
	mustCheck(t, CheckAgentExpiry, mk(opt{end: sec(100), fault: proc, faultFrom: sec(5)}), 1)
}

// TestCheckAgentRecord (S63): an entry that takes an agent's meta off its
// node on a server that had it is a violation, on every path the rule
// covers; the node leaving the catalog first, another server or
// incarnation, and a snapshot restore are not.
func TestCheckAgentRecord(t *testing.T) {
	record := map[string]string{"consul-network-segment": "", "rack": "r1"}
	bare := map[string]string{"consul-version": "0.1.0"}
	type step struct {
		server      string
		incarnation int
		obs         core.StateObs
	}
	// on is one node's meta after an entry.
	on := func(node string, meta map[string]string) map[string]map[string]string {
		return map[string]map[string]string{node: meta}
	}
	for name, tc := range map[string]struct {
		steps []step
		want  int
	}{
		"record kept": {[]step{
			{"n1", 0, core.StateObs{Index: 3, NodeMeta: on("agent1", bare)}},
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 9, NodeMeta: on("agent1", map[string]string{"consul-network-segment": "", "rack": "r2"})}},
		}, 0},
		"record dropped": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 9, NodeMeta: on("agent1", bare)}},
		}, 1},
		"meta cleared": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 9, NodeMeta: on("agent1", nil)}},
		}, 1},
		"dropped on one of two nodes": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: map[string]map[string]string{"agent1": record, "agent2": record}}},
			{"n1", 0, core.StateObs{Index: 9, NodeMeta: on("agent2", bare)}},
		}, 1},
		"node gone in between": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 6, GoneNodes: []string{"agent1"}}},
			{"n1", 0, core.StateObs{Index: 9, NodeMeta: on("agent1", bare)}},
		}, 0},
		"renamed in the same entry": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 9, GoneNodes: []string{"agent1"}, NodeMeta: on("agent1", bare)}},
		}, 0},
		"another server": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n2", 0, core.StateObs{Index: 3, NodeMeta: on("agent1", bare)}},
		}, 0},
		"a restarted server": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 1, core.StateObs{Index: 3, NodeMeta: on("agent1", bare)}},
		}, 0},
		"a snapshot restore": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 9, Restored: true, NodeMeta: on("agent1", bare)}},
			{"n1", 0, core.StateObs{Index: 10, NodeMeta: on("agent1", map[string]string{"x": "y"})}},
		}, 0},
		"dropped after a restore that left it alone": {[]step{
			{"n1", 0, core.StateObs{Index: 4, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 9, Restored: true, NodeMeta: on("agent2", bare)}},
			{"n1", 0, core.StateObs{Index: 10, NodeMeta: on("agent1", bare)}},
		}, 1},
		"dropped after a restore brought it": {[]step{
			{"n1", 0, core.StateObs{Index: 9, Restored: true, NodeMeta: on("agent1", record)}},
			{"n1", 0, core.StateObs{Index: 10, NodeMeta: on("agent1", bare)}},
		}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			b := newTB()
			for i, s := range tc.steps {
				s.obs.Incarnation = s.incarnation
				b.obs(sec(float64(i+1)), s.server, true, s.obs)
			}
			vs := mustCheck(t, CheckAgentRecord, b.ev, tc.want)
			for _, v := range vs {
				if !strings.Contains(v.Msg, "S63") {
					t.Errorf("message %q names no clause", v.Msg)
				}
			}
		})
	}
}

// TestCheckAgentRecordWritten (S63): an agent's record missing from the
// most advanced server's final state, once nothing blocked the agent for
// Election + AgentSync + Slack (10 + 31 + 5 s here, from the start or the
// last fault that may block the agent), is a violation on each
// way it can be missing: never written, written only on a server that
// fell behind, no server with any entry. A run that ends first, a fault
// that heals too late or never, and a record lost during the run (the
// safety check's business) ask nothing.
func TestCheckAgentRecordWritten(t *testing.T) {
	record := map[string]string{"consul-network-segment": ""}
	type state struct {
		at     time.Duration
		server string
		obs    core.StateObs
	}
	type opt struct {
		states             []state
		fault              *core.FaultMark
		faultFrom, faultTo time.Duration
		end                time.Duration
	}
	mk := func(o opt) []core.Event {
		b := newTB()
		h := b.ev[0].Run
		h.Agents = []string{"agent1"}
		h.Clients = []core.ClientInfo{{Name: "c-1", Group: "g", Agent: "agent1"}}
		h.Bounds.AgentSync, h.Bounds.Election, h.Bounds.Slack = 31*time.Second, 10*time.Second, 5*time.Second
		for _, s := range o.states {
			b.obs(s.at, s.server, true, s.obs)
		}
		if o.fault != nil {
			b.fault(o.fault, o.faultFrom, o.faultTo)
		}
		return b.end(o.end)
	}
	written := state{sec(2), "n1", core.StateObs{Index: 4, NodeMeta: map[string]map[string]string{"agent1": record}}}
	bare := state{sec(1), "n1", core.StateObs{Index: 3, NodeMeta: map[string]map[string]string{"agent1": nil}}}
	later := state{sec(3), "n1", core.StateObs{Index: 9}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, written, later}, end: sec(100)}), 0)
	vs := mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, end: sec(100)}), 1) // never written
	if !strings.Contains(vs[0].Msg, "agent1") || !strings.Contains(vs[0].Msg, "S63") {
		t.Errorf("message %q names no agent or clause", vs[0].Msg)
	}
	mustCheck(t, CheckAgentWritten, mk(opt{end: sec(100)}), 1)                              // no server applied anything
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, end: sec(45)}), 0) // the run ended first
	// Written on n1, but n2 applied further without it: n2's state is the one judged.
	ahead := state{sec(5), "n2", core.StateObs{Index: 12, NodeMeta: map[string]map[string]string{"agent1": nil}}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, written, ahead}, end: sec(100)}), 1)
	behind := state{sec(5), "n2", core.StateObs{Index: 2, NodeMeta: map[string]map[string]string{"agent1": nil}}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, written, behind}, end: sec(100)}), 0)
	// Lost during the run (deregistered, then registered bare): not judged here.
	gone := state{sec(6), "n1", core.StateObs{Index: 10, GoneNodes: []string{"agent1"}}}
	back := state{sec(7), "n1", core.StateObs{Index: 11, NodeMeta: map[string]map[string]string{"agent1": nil}}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, written, gone, back}, end: sec(100)}), 0)
	// A leader kill healed at 20 s: the deadline is 20 + 10 + 31 + 5 = 66 s.
	kill := &core.FaultMark{ID: 1, Kind: core.FaultLeaderKill, Phase: "start", Targets: []string{"n1"}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, fault: kill, faultFrom: sec(12), faultTo: sec(20), end: sec(70)}), 1)
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, fault: kill, faultFrom: sec(12), faultTo: sec(20), end: sec(60)}), 0)
	// The agent's host crashed for good, or is still partitioned at the end.
	crash := &core.FaultMark{ID: 1, Kind: core.FaultClientCrash, Phase: "start", Targets: []string{"c-1", "agent1"}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, fault: crash, faultFrom: sec(5), faultTo: sec(6), end: sec(100)}), 0)
	cut := &core.FaultMark{ID: 1, Kind: core.FaultClientPartition, Phase: "start", Targets: []string{"c-1", "agent1"}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, fault: cut, faultFrom: sec(5), end: sec(100)}), 0)
	// A fault elsewhere does not excuse it: another client's host paused.
	other := &core.FaultMark{ID: 1, Kind: core.FaultClientPause, Phase: "start", Targets: []string{"c-2", "agent2"}}
	mustCheck(t, CheckAgentWritten, mk(opt{states: []state{bare, later}, fault: other, faultFrom: sec(5), end: sec(100)}), 1)
}
