package linearizability

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// Each rule by which step judges an operation illegal has a known-bad
// history here that only that rule rejects, next to a good twin that
// differs from it minimally, so deleting or loosening the rule fails this
// test. Rules covered by a pair in testdata/histories are not repeated.

const second = Nanos(time.Second)

// secs is t seconds as a history time.
func secs(t float64) Nanos { return Nanos(t * float64(time.Second)) }

// ruleHistory starts from node n1 (with serfHealth) and runs ops.
func ruleHistory(ops ...Op) History {
	return History{
		Setup: []model.Command{{Register: &model.Register{Node: "n1", Address: "10.0.0.1",
			Checks: []model.CheckSpec{{CheckID: "serfHealth", Name: "Serf Health Status", Status: model.HealthPassing}}}}},
		Ops: ops,
	}
}

// answered is an op of client c called at call and answered 100ms later.
func answered(c int, call Nanos, in Input, out Output) Op {
	return Op{Client: c, Call: call, Return: call + second/10, Input: in, Output: out}
}

func cmdIn(c model.Command) Input { return Input{Command: &c} }

// ruleSession is the session every rule history creates: release
// behaviour, 15s lock-delay, bound to no check.
func ruleSession(id string) model.Session {
	return model.Session{ID: id, Name: "lock-" + id, Node: "n1", Checks: []string{}, LockDelay: model.DefaultLockDelay, Behavior: model.BehaviorRelease}
}

func createAt(c int, call Nanos, id string) Op {
	se := ruleSession(id)
	return answered(c, call, cmdIn(model.Command{CreateSession: &model.CreateSession{Name: se.Name, Node: se.Node,
		Checks: se.Checks, LockDelay: se.LockDelay, Behavior: se.Behavior}}), Output{OK: true, SessionID: id})
}

func lockIn(key, session string) Input {
	return cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: key, Session: session}})
}

func destroyIn(id string) Input {
	return cmdIn(model.Command{DestroySession: &model.DestroySession{ID: id}})
}

func txnIn(ops ...model.KVOp) Input { return cmdIn(model.Command{Txn: model.KVTxn(ops...)}) }

func lockDelayError(op int, key string) []model.TxnError {
	return []model.TxnError{{OpIndex: op, What: `failed to lock key "` + key + `" due to lock delay`}}
}

// invalidated is the history prefix in which A takes k at 1s and is
// destroyed in [2s, 2.1s]: k's 15s lock-delay surely runs until 17s and has
// surely ended by 17.1s (S22).
func invalidated() []Op {
	return []Op{
		createAt(0, 0, "sess-A"),
		createAt(1, secs(0.5), "sess-B"),
		answered(0, secs(1), lockIn("k", "sess-A"), Output{OK: true}),
		answered(0, secs(2), destroyIn("sess-A"), Output{OK: true}),
	}
}

// during is invalidated() followed by op.
func during(op Op) History { return ruleHistory(append(invalidated(), op)...) }

// window is an op answered exactly at ret after being called at call.
func window(op Op, call, ret Nanos) Op {
	op.Call, op.Return = call, ret
	return op
}

// armedBy is the history prefix in which A (bound to n1's serfHealth, on
// n1) takes k at 1s and B (on n2) is created, followed by the ops and
// events that invalidate A within [2s, 2.1s]: each way a lock-delay gets
// armed (S10, S11, S12, S14, S16, S22). k's 15s lock-delay then surely
// runs until 17s. grant is B's acquire answered at ret.
func armedBy(invalidate []Op, events []Event, grant Op) History {
	healthy := []model.CheckSpec{{CheckID: "serfHealth", Name: "Serf Health Status", Status: model.HealthPassing}}
	create := func(c int, call Nanos, id, node string, checks []string) Op {
		return answered(c, call, cmdIn(model.Command{CreateSession: &model.CreateSession{Name: "lock-" + id, Node: node,
			Checks: checks, LockDelay: model.DefaultLockDelay, Behavior: model.BehaviorRelease}}), Output{OK: true, SessionID: id})
	}
	ops := []Op{
		create(0, 0, "sess-A", "n1", []string{"serfHealth"}),
		create(1, secs(0.5), "sess-B", "n2", []string{}),
		answered(0, secs(1), lockIn("k", "sess-A"), Output{OK: true}),
	}
	ops = append(append(ops, invalidate...), grant)
	return History{
		Setup: []model.Command{
			{Register: &model.Register{Node: "n1", Address: "10.0.0.1", Checks: healthy}},
			{Register: &model.Register{Node: "n2", Address: "10.0.0.2", Checks: healthy}},
		},
		Ops:    ops,
		Events: events,
	}
}

type ruleCase struct {
	name    string
	clauses string
	good    History
	bad     History
	// wholeOnly, when set, says why the per-key check is not asked.
	wholeOnly string
}

func TestRejectionRules(t *testing.T) {
	lockedTxn := Output{OK: true, Entries: []model.KVEntry{{Key: "k", LockIndex: 2, Session: "sess-B"}}}
	txnLockB := txnIn(model.KVOp{Verb: model.KVLock, Key: "k", Session: "sess-B"})
	staleCAS := model.KVOp{Verb: model.KVCAS, Key: "k", Value: []byte("v"), Index: 9}
	staleError := []model.TxnError{{OpIndex: 0, What: `failed to set key "k", index is stale`}}
	setK := model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}
	checks := func(n int) []model.KVOp {
		ops := make([]model.KVOp, n)
		for i := range ops {
			ops[i] = model.KVOp{Verb: model.KVCheckNotExists, Key: "k"}
		}
		return ops
	}
	tooMany := Output{Error: "Transaction contains too many operations (129 > 128)"}
	getK := func(c int, call Nanos, found bool) Op {
		out := Output{}
		if found {
			out = Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("v")}}}
		}
		return answered(c, call, Input{Read: &Read{Kind: ReadKey, Key: "k"}}, out)
	}
	seen50 := answered(1, secs(2), Input{Read: &Read{Kind: ReadKey, Key: "k"}},
		Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("v"), CreateIndex: 50, ModifyIndex: 50}}})
	setAt1 := answered(0, secs(1), cmdIn(model.Command{KV: &setK}), Output{OK: true})
	checkIndexThen := func(index uint64) Op {
		return answered(0, secs(3), txnIn(model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("w")},
			model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: index}),
			Output{OK: true, Entries: []model.KVEntry{{Key: "k"}, {Key: "k"}}})
	}
	twoChecks := func(a, b uint64) Op {
		return answered(0, secs(3), txnIn(model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: a},
			model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: b}),
			Output{OK: true, Entries: []model.KVEntry{{Key: "k"}, {Key: "k"}}})
	}
	deleted := []Op{
		answered(0, 0, cmdIn(model.Command{CreateSession: &model.CreateSession{Name: "lock-sess-D", Node: "n1", Checks: []string{},
			LockDelay: model.DefaultLockDelay, Behavior: model.BehaviorDelete}}), Output{OK: true, SessionID: "sess-D"}),
		createAt(1, secs(0.5), "sess-B"),
		answered(0, secs(1), lockIn("k", "sess-D"), Output{OK: true}),
		answered(0, secs(2), destroyIn("sess-D"), Output{OK: true}),
	}
	list := func(call Nanos, entries ...model.KVEntry) Op {
		return answered(1, call, Input{Read: &Read{Kind: ReadPrefix, Key: "k"}}, Output{OK: true, Entries: entries})
	}
	getAt := func(t float64, create, modify uint64) Op {
		return answered(1, secs(t), Input{Read: &Read{Kind: ReadKey, Key: "k"}},
			Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("v"), CreateIndex: create, ModifyIndex: modify}}})
	}
	getW := func(t float64, create, modify uint64) Op {
		op := getAt(t, create, modify)
		op.Output.Entries[0].Value = []byte("w")
		return op
	}
	setW := func(t float64) Op {
		return answered(0, secs(t), cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("w")}}), Output{OK: true})
	}
	abortedOwnCheck := answered(0, secs(2), txnIn(model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("x")},
		model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: 40}, model.KVOp{Verb: model.KVCAS, Key: "j", Index: 9}),
		Output{TxnErrors: []model.TxnError{{OpIndex: 2, What: `failed to set key "j", index is stale`}}})
	setJ := answered(0, secs(0.5), cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "j", Value: []byte("v")}}), Output{OK: true})
	seenJ50 := answered(1, secs(0.7), Input{Read: &Read{Kind: ReadKey, Key: "j"}},
		Output{OK: true, Entries: []model.KVEntry{{Key: "j", Value: []byte("v"), ModifyIndex: 50}}})
	threeChecks := func(a, b uint64) Op {
		return answered(0, secs(3), txnIn(model.KVOp{Verb: model.KVCheckIndex, Key: "j", Index: 50},
			model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: a}, model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: b}),
			Output{OK: true, Entries: []model.KVEntry{{Key: "j"}, {Key: "k"}, {Key: "k"}}})
	}
	casAt := func(t float64, index uint64, ok bool) Op {
		return answered(0, secs(t), cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVCAS, Key: "k", Value: []byte("w"), Index: index}}), Output{OK: ok})
	}
	unknownDestroy := invalidated()
	unknownDestroy[3].Unknown = true

	critical := model.Command{Register: &model.Register{Node: "n1", Address: "10.0.0.1",
		Checks: []model.CheckSpec{{CheckID: "serfHealth", Name: "Serf Health Status", Status: model.HealthCritical}}}}
	inTime := window(answered(1, 0, lockIn("k", "sess-B"), Output{OK: true}), secs(16.9), secs(17))
	early := window(inTime, secs(16.9), secs(17)-1)
	invalidatingOp := func(c model.Command) []Op { return []Op{answered(0, secs(2), cmdIn(c), Output{OK: true})} }
	invalidatingEvent := func(ev Event) []Event {
		ev.Earliest, ev.Latest = secs(2), secs(2.1)
		return []Event{ev}
	}
	// Every way a lock-delay gets armed, each caught only by the rule
	// that a free key's grant must come after the delay (lockOutcome).
	arming := []struct {
		name   string
		ops    []Op
		events []Event
	}{
		{"deregistering the holder's node", invalidatingOp(model.Command{Deregister: &model.Deregister{Node: "n1"}}), nil},
		{"deregistering the holder's check", invalidatingOp(model.Command{Deregister: &model.Deregister{Node: "n1", CheckID: "serfHealth"}}), nil},
		{"a client marking the holder's check critical", invalidatingOp(critical), nil},
		{"an event destroying the holder (TTL expiry)", nil, invalidatingEvent(Event{Kind: "ttl-expiry", Sessions: []string{"sess-A"}})},
		{"an event marking the holder's check critical", nil, invalidatingEvent(Event{Kind: "check-critical", Command: &critical})},
	}

	cases := []ruleCase{
		{
			name: "destroy answered an error", clauses: "S13",
			good: ruleHistory(createAt(0, 0, "sess-A"), answered(0, secs(1), destroyIn("sess-A"), Output{OK: true})),
			bad:  ruleHistory(createAt(0, 0, "sess-A"), answered(0, secs(1), destroyIn("sess-A"), Output{Error: "Session not found"})),
		},
		{
			name: "destroy answered false", clauses: "S13",
			good: ruleHistory(createAt(0, 0, "sess-A"), answered(0, secs(1), destroyIn("sess-A"), Output{OK: true})),
			bad:  ruleHistory(createAt(0, 0, "sess-A"), answered(0, secs(1), destroyIn("sess-A"), Output{})),
		},
		{
			name: "lock-delay header on an acquire refused because the key is held", clauses: "S25, S29",
			good: ruleHistory(createAt(0, 0, "sess-A"), createAt(1, 0, "sess-B"),
				answered(0, secs(1), lockIn("k", "sess-A"), Output{OK: true}),
				answered(1, secs(2), lockIn("k", "sess-B"), Output{})),
			bad: ruleHistory(createAt(0, 0, "sess-A"), createAt(1, 0, "sess-B"),
				answered(0, secs(1), lockIn("k", "sess-A"), Output{OK: true}),
				answered(1, secs(2), lockIn("k", "sess-B"), Output{LockDelayed: true})),
		},
		{
			// The delay has surely ended at 17.1s: a refusal called then is late.
			name: "acquire refused from the instant the delay has surely ended", clauses: "S22",
			good: during(window(answered(1, 0, lockIn("k", "sess-B"), Output{LockDelayed: true}), secs(17.1)-1, secs(17.2))),
			bad:  during(window(answered(1, 0, lockIn("k", "sess-B"), Output{LockDelayed: true}), secs(17.1), secs(17.2))),
		},
		{
			// The delay may have ended at 17s: a grant answered then is in time.
			name: "acquire granted before the delay can have ended", clauses: "S22",
			good: during(window(answered(1, 0, lockIn("k", "sess-B"), Output{OK: true}), secs(16.9), secs(17))),
			bad:  during(window(answered(1, 0, lockIn("k", "sess-B"), Output{OK: true}), secs(16.9), secs(17)-1)),
		},
		{
			name: "acquire re-creates a key deleted by invalidation inside its lock-delay", clauses: "S17, S22",
			good: ruleHistory(append(deleted, window(answered(1, 0, lockIn("k", "sess-B"), Output{OK: true}), secs(16.9), secs(17)))...),
			bad:  ruleHistory(append(deleted, window(answered(1, 0, lockIn("k", "sess-B"), Output{OK: true}), secs(16.9), secs(17)-1))...),
		},
		{
			name: "txn lock granted inside the lock-delay of a released key", clauses: "S22",
			good: during(window(answered(1, 0, txnLockB, lockedTxn), secs(16.9), secs(17))),
			bad:  during(window(answered(1, 0, txnLockB, lockedTxn), secs(4.9), secs(5))),
		},
		{
			name: "txn lock re-creates a key deleted by invalidation inside its lock-delay", clauses: "S17, S22",
			good: ruleHistory(append(deleted, window(answered(1, 0, txnLockB, Output{OK: true, Entries: []model.KVEntry{{Key: "k", LockIndex: 2, Session: "sess-B"}}}), secs(16.9), secs(17)))...),
			bad:  ruleHistory(append(deleted, window(answered(1, 0, txnLockB, Output{OK: true, Entries: []model.KVEntry{{Key: "k", LockIndex: 2, Session: "sess-B"}}}), secs(16.9), secs(17)-1))...),
		},
		{
			name: "txn lock refused for lock-delay from the instant it has surely ended", clauses: "S22, S25",
			good: during(window(answered(1, 0, txnLockB, Output{TxnErrors: lockDelayError(0, "k")}), secs(17.1)-1, secs(17.2))),
			bad:  during(window(answered(1, 0, txnLockB, Output{TxnErrors: lockDelayError(0, "k")}), secs(17.1), secs(17.2))),
		},
		{
			name: "txn set refused for lock-delay", clauses: "S24, S25",
			good: during(answered(1, secs(5), txnLockB, Output{TxnErrors: lockDelayError(0, "k")})),
			bad:  during(answered(1, secs(5), txnIn(setK), Output{TxnErrors: lockDelayError(0, "k")})),
		},
		{
			name: "txn lock-delay refusal names an op the txn does not have", clauses: "S25, S44",
			good: during(answered(1, secs(5), txnLockB, Output{TxnErrors: lockDelayError(0, "k")})),
			bad:  during(answered(1, secs(5), txnLockB, Output{TxnErrors: lockDelayError(1, "k")})),
		},
		{
			name: "txn both committed and refused for lock-delay", clauses: "S25, S44",
			good: during(answered(1, secs(5), txnLockB, Output{TxnErrors: lockDelayError(0, "k")})),
			bad:  during(answered(1, secs(5), txnLockB, Output{OK: true, TxnErrors: lockDelayError(0, "k")})),
		},
		{
			name: "txn over the size limit committed", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(checks(model.MaxTxnOps+1)...), tooMany)),
			bad:  ruleHistory(answered(0, secs(1), txnIn(checks(model.MaxTxnOps+1)...), Output{OK: true})),
		},
		{
			name: "txn at the size limit refused as too large", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(checks(model.MaxTxnOps)...), Output{OK: true})),
			bad:  ruleHistory(answered(0, secs(1), txnIn(checks(model.MaxTxnOps)...), tooMany)),
		},
		{
			name: "txn over the size limit took effect", clauses: "S44",
			good: ruleHistory(Op{Client: 0, Call: secs(1), Unknown: true, Input: txnIn(append(checks(model.MaxTxnOps), setK)...)}, getK(1, secs(5), false)),
			bad:  ruleHistory(Op{Client: 0, Call: secs(1), Unknown: true, Input: txnIn(append(checks(model.MaxTxnOps), setK)...)}, getK(1, secs(5), true)),
		},
		{
			name: "txn of legal size rejected as a whole", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(staleCAS), Output{TxnErrors: staleError})),
			bad:  ruleHistory(answered(0, secs(1), txnIn(staleCAS), Output{Error: "rpc error", TxnErrors: staleError})),
		},
		{
			name: "aborted txn answered OK", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(staleCAS), Output{TxnErrors: staleError})),
			bad:  ruleHistory(answered(0, secs(1), txnIn(staleCAS), Output{OK: true, TxnErrors: staleError})),
		},
		{
			name: "aborted txn blames an op that succeeds", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(model.KVOp{Verb: model.KVSet, Key: "a"}, staleCAS),
				Output{TxnErrors: []model.TxnError{{OpIndex: 1, What: staleError[0].What}}})),
			bad: ruleHistory(answered(0, secs(1), txnIn(model.KVOp{Verb: model.KVSet, Key: "a"}, staleCAS),
				Output{TxnErrors: []model.TxnError{{OpIndex: 0, What: staleError[0].What}}})),
		},
		{
			name: "txn committed though its cas of an absent key fails", clauses: "S35, S44",
			good: ruleHistory(answered(0, secs(1), txnIn(staleCAS), Output{TxnErrors: staleError})),
			bad:  ruleHistory(answered(0, secs(1), txnIn(staleCAS), Output{OK: true})),
		},
		{
			name: "committed txn answered false", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(setK), Output{OK: true, Entries: []model.KVEntry{{Key: "k"}}})),
			bad:  ruleHistory(answered(0, secs(1), txnIn(setK), Output{Entries: []model.KVEntry{{Key: "k"}}})),
		},
		{
			name: "committed txn without its result", clauses: "S44",
			good: ruleHistory(answered(0, secs(1), txnIn(setK), Output{OK: true, Entries: []model.KVEntry{{Key: "k"}}})),
			bad:  ruleHistory(answered(0, secs(1), txnIn(setK), Output{OK: true})),
		},
		{
			name: "one version matches two indexes in one txn", clauses: "S37, S42",
			good: ruleHistory(setAt1, twoChecks(100, 100)),
			bad:  ruleHistory(setAt1, twoChecks(100, 200)),
		},
		{
			name: "txn's own write matched at an index older than one already seen", clauses: "S37, S42",
			good: ruleHistory(setAt1, seen50, checkIndexThen(60)),
			bad:  ruleHistory(setAt1, seen50, checkIndexThen(40)),
		},
		{
			name: "txn read answers a value never written", clauses: "S42, S44",
			good: ruleHistory(setAt1, answered(0, secs(2), txnIn(model.KVOp{Verb: model.KVGet, Key: "k"}),
				Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("v")}}})),
			bad: ruleHistory(setAt1, answered(0, secs(2), txnIn(model.KVOp{Verb: model.KVGet, Key: "k"}),
				Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("other")}}})),
		},
		{
			name: "txn lock-delay refusal names a negative op", clauses: "S25, S44",
			good: during(answered(1, secs(5), txnLockB, Output{TxnErrors: lockDelayError(0, "k")})),
			bad:  during(answered(1, secs(5), txnLockB, Output{TxnErrors: lockDelayError(-1, "k")})),
		},
		{
			name: "list misses a key", clauses: "S45",
			good: ruleHistory(setAt1, list(secs(2), model.KVEntry{Key: "k", Value: []byte("v")})),
			bad:  ruleHistory(setAt1, list(secs(2))),
		},
		{
			name: "list answers a key never written", clauses: "S45",
			good: ruleHistory(setAt1, list(secs(2), model.KVEntry{Key: "k", Value: []byte("v")})),
			bad:  ruleHistory(setAt1, list(secs(2), model.KVEntry{Key: "k", Value: []byte("v")}, model.KVEntry{Key: "k2", Value: []byte("v")})),
		},
		{
			name: "list answers a value never written", clauses: "S45",
			good: ruleHistory(setAt1, list(secs(2), model.KVEntry{Key: "k", Value: []byte("v")})),
			bad:  ruleHistory(setAt1, list(secs(2), model.KVEntry{Key: "k", Value: []byte("other")})),
		},
		{
			name: "a newer version shows the index of an older one", clauses: "S37",
			good: ruleHistory(setAt1, getAt(2, 0, 10), setW(3), getW(4, 0, 11)),
			bad:  ruleHistory(setAt1, getAt(2, 0, 10), setW(3), getW(4, 0, 10)),
		},
		{
			// k was created by the first set and modified by the second, so
			// its CreateIndex is below the ModifyIndex already seen.
			name: "a key modified after its creation shows CreateIndex = ModifyIndex", clauses: "S37",
			good: ruleHistory(setAt1, setW(2), getW(3, 0, 9), getW(4, 8, 9)),
			bad:  ruleHistory(setAt1, setW(2), getW(3, 0, 9), getW(4, 9, 9)),
		},
		{
			// The txn aborts on its cas of j, so its write of k never got an
			// index; the later set of k may get any index.
			name: "an aborted txn's index reading binds nothing", clauses: "S37, S44",
			// Per key, k's partition sees its share of the txn commit while
			// the server reports the abort at j's op; txnWith once returned
			// base with a binding the commit made on a shared tracker map.
			good: ruleHistory(setAt1, abortedOwnCheck, setW(3), getW(4, 0, 30)),
			bad:  ruleHistory(setAt1, abortedOwnCheck, setW(3), getW(4, 0, 30), getW(5, 0, 29)),
		},
		{
			name: "one version matches two indexes after an exact check of another key", clauses: "S37, S42",
			good: ruleHistory(setJ, seenJ50, setAt1, threeChecks(100, 100)),
			bad:  ruleHistory(setJ, seenJ50, setAt1, threeChecks(100, 200)),
		},
		{
			// Nobody saw the index of the set's version, so a cas naming
			// any index above what was seen may have matched it.
			name: "cas matching a version whose index nobody saw", clauses: "S35, S37",
			good: ruleHistory(setAt1, casAt(3, 77, true)),
			bad:  ruleHistory(setAt1, getAt(2, 0, 80), casAt(3, 77, true)),
		},
		{
			// The cas could only succeed by matching the set's version at
			// 77, so the version it wrote has an index above 77.
			name: "version written by a cas shows the index the cas matched", clauses: "S35, S37",
			good: ruleHistory(setAt1, casAt(3, 77, true), getW(4, 0, 78)),
			bad:  ruleHistory(setAt1, casAt(3, 77, true), getW(4, 0, 77)),
		},
		{
			name: "one incarnation shows two CreateIndexes", clauses: "S37",
			good: ruleHistory(setAt1, setW(2), getW(3, 10, 20), getW(4, 10, 20)),
			bad:  ruleHistory(setAt1, setW(2), getW(3, 10, 20), getW(4, 11, 20)),
		},
		{
			// An unknown destroy may apply at any later time, so its
			// delay never surely ends; a known one's has ended by 17.1s.
			name: "refusal long after an invalidation known to be over", clauses: "S22",
			good: ruleHistory(append(unknownDestroy, answered(1, secs(1000), lockIn("k", "sess-B"), Output{LockDelayed: true}))...),
			bad:  during(answered(1, secs(1000), lockIn("k", "sess-B"), Output{LockDelayed: true})),
		},
	}
	for _, a := range arming {
		cases = append(cases, ruleCase{
			name: "acquire granted inside the lock-delay armed by " + a.name, clauses: "S22",
			good: armedBy(a.ops, a.events, inTime),
			bad:  armedBy(a.ops, a.events, early),
		})
	}
	// S1: session-info shows the stored session; each field is compared.
	info := func(g *model.Session) History {
		return ruleHistory(createAt(0, 0, "sess-A"),
			answered(0, secs(1), Input{Read: &Read{Kind: ReadSession, Session: "sess-A"}}, Output{OK: true, Session: g}))
	}
	stored := ruleSession("sess-A")
	for field, change := range map[string]func(se *model.Session){
		"ID":        func(se *model.Session) { se.ID = "sess-X" },
		"Name":      func(se *model.Session) { se.Name = "other" },
		"Node":      func(se *model.Session) { se.Node = "n2" },
		"Checks":    func(se *model.Session) { se.Checks = []string{"serfHealth"} },
		"LockDelay": func(se *model.Session) { se.LockDelay = time.Second },
		"Behavior":  func(se *model.Session) { se.Behavior = model.BehaviorDelete },
		"TTL":       func(se *model.Session) { se.TTL = "30s" },
	} {
		wrong := stored
		change(&wrong)
		cases = append(cases, ruleCase{name: "session-info shows another " + field, clauses: "S1, S20", good: info(&stored), bad: info(&wrong)})
	}
	cases = append(cases, ruleCase{
		// A renew may answer 200 without a body worth comparing.
		name: "renew of a destroyed session answered found", clauses: "S20",
		good: ruleHistory(createAt(0, 0, "sess-A"),
			answered(0, secs(1), Input{Read: &Read{Kind: RenewSess, Session: "sess-A"}}, Output{OK: true})),
		bad: ruleHistory(createAt(0, 0, "sess-A"), answered(0, secs(1), destroyIn("sess-A"), Output{OK: true}),
			answered(0, secs(2), Input{Read: &Read{Kind: RenewSess, Session: "sess-A"}}, Output{OK: true})),
	})

	// Each case is a subtest, so that mutation/deletions.go can name the
	// cases a deleted rule must fail.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, whole := range []bool{false, true} {
				if !whole && tc.wholeOnly != "" {
					continue
				}
				mode := map[bool]string{false: "per-key", true: "whole"}[whole]
				if _, err := Check(tc.good, Options{Timeout: 10 * time.Second, Whole: whole}); err != nil {
					t.Errorf("%s (%s), good twin, %s: %v", tc.name, tc.clauses, mode, err)
				}
				rep, err := Check(tc.bad, Options{Timeout: 10 * time.Second, Whole: whole})
				if !errors.Is(err, ErrIllegal) || rep.Verdict != VerdictIllegal {
					t.Errorf("%s (%s), bad history, %s: verdict %q, err %v; want illegal", tc.name, tc.clauses, mode, rep.Verdict, err)
				}
			}
		})
	}
}

// satAdd saturates instead of wrapping, so a window bound of an unknown
// operation (returning "never") stays "never" after adding a delay.
func TestSatAdd(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{
		{3, 4, 7},
		{5, -3, 2},
		{-5, 3, -2},
		{math.MaxInt64 - 5, 5, math.MaxInt64},
		{math.MaxInt64 - 5, 6, math.MaxInt64},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MinInt64 + 5, -5, math.MinInt64},
		{math.MinInt64 + 5, -6, math.MinInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
	} {
		if got := satAdd(tc.a, tc.b); got != tc.want {
			t.Errorf("satAdd(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
