package linearizability

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// The visualisation names each operation, answer and state in words a
// person can check against the history: times relative to the first call,
// session IDs cut to 8 characters, defaults spelled out, and only the
// fields that are set.
func TestDescriptions(t *testing.T) {
	long := "sess-0123456789"
	critical := model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthCritical}, {CheckID: "web", Status: model.HealthPassing}}}}
	h := History{
		Setup: []model.Command{{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}}},
		Ops: []Op{
			answered(0, secs(5), cmdIn(model.Command{CreateSession: &model.CreateSession{Node: "n1", Checks: []string{"serfHealth"}, LockDelay: time.Second, TTL: "30s"}}), Output{OK: true, SessionID: long}),
			answered(1, secs(6), cmdIn(model.Command{CreateSession: &model.CreateSession{Node: "n9", Behavior: model.BehaviorDelete}}), Output{Error: "Missing node registration"}),
			answered(0, secs(7), cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Value: []byte("v"), Flags: 3, Session: long}}), Output{LockDelayed: true}),
			answered(0, secs(8), cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVCAS, Key: "k", Index: 12}}), Output{OK: true}),
			{Client: 2, Call: secs(9), Unknown: true, Input: destroyIn(long)},
			answered(1, secs(10), txnIn(model.KVOp{Verb: model.KVSet, Key: "a"}, model.KVOp{Verb: model.KVGet, Key: "b"}),
				Output{TxnErrors: []model.TxnError{{OpIndex: 1, What: "no b"}, {OpIndex: 0, What: "x"}}}),
			answered(1, secs(11), getIn("k"), Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("v"), Flags: 3, LockIndex: 2, Session: long, CreateIndex: 4, ModifyIndex: 9}}}),
			answered(1, secs(12), getIn("j"), Output{}),
			answered(1, secs(13), listIn("a/"), Output{OK: true, Entries: []model.KVEntry{{Key: "a/x"}, {Key: "a/y", Value: []byte("w")}}}),
			answered(1, secs(14), Input{Read: &Read{Kind: ReadSession, Session: long}}, Output{OK: true, Session: &model.Session{ID: long, Node: "n1", Checks: []string{"serfHealth"}, LockDelay: time.Second, TTL: "30s"}}),
			answered(1, secs(15), Input{Read: &Read{Kind: RenewSess, Session: "s2"}}, Output{}),
			answered(1, secs(16), Input{Read: &Read{Kind: ReadSession, Session: "s3"}}, Output{OK: true, Session: &model.Session{ID: "s3", Behavior: model.BehaviorDelete}}),
			answered(1, secs(17), destroyIn("s3"), Output{OK: true}),
		},
		Events: []Event{
			{Kind: "check-critical", Earliest: secs(20), Latest: secs(21), Command: &critical, Invalidated: []string{long}},
			{Kind: "ttl-expiry", Earliest: secs(22), Latest: secs(23), Sessions: []string{long, "s2"}},
			{Kind: "deregister", Earliest: secs(24), Latest: secs(25), Command: &model.Command{Deregister: &model.Deregister{Node: "n1", CheckID: "web"}}},
			{Kind: "deregister", Earliest: secs(26), Latest: secs(27), Command: &model.Command{Deregister: &model.Deregister{Node: "n1"}}},
		},
	}
	recs, _, _, err := normalize(h)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newChecker(h, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create session sess-012 node=n1 checks=[serfHealth] lock-delay=1s behavior=release ttl=30s → sess-012",
		"create session (rejected) node=n9 checks=[] lock-delay=0s behavior=delete → error: Missing node registration",
		"lock k v=\"v\" flags=3 s=sess-012 → refused for lock-delay",
		"cas k index=12 → true",
		"destroy session sess-012 → ? (outcome unknown)",
		"txn[set a; get b] → aborted: #1 no b; #0 x",
		"get k → k{v=\"v\" flags=3 lock-index=2 held by sess-012 index 4/9}",
		"get j → not found",
		"list a/ → a/x{v=\"\" flags=0 lock-index=0 free index 0/0}, a/y{v=\"w\" flags=0 lock-index=0 free index 0/0}",
		"session-info sess-012 → found sess-012(release lock-delay=1s ttl=30s checks=n1:[serfHealth])",
		"session-renew s2 → not found",
		"session-info s3 → found s3(delete lock-delay=0s)",
		"destroy session s3 → true",
		"[check-critical, window 15s–16s] register node n1 serfHealth=critical web=passing (server reported [sess-012])",
		"[ttl-expiry, window 17s–18s] invalidate [sess-012 s2]",
		"[deregister, window 19s–20s] deregister check n1/web",
		"[deregister, window 21s–22s] deregister node n1",
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if got := c.describeOp(stepIn{r: r}, nil); got != want[i] {
			t.Errorf("op %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	m := model.New()
	for i, cmd := range []model.Command{
		h.Setup[0],
		{CreateSession: &model.CreateSession{ID: long, Node: "n1", Checks: []string{"serfHealth"}, LockDelay: time.Second, TTL: "30s"}},
		{CreateSession: &model.CreateSession{ID: "s3", Node: "n1", Behavior: model.BehaviorDelete}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Value: []byte("v"), Session: long}},
		{KV: &model.KVOp{Verb: model.KVSet, Key: "j", Value: []byte("w"), Flags: 7}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "g", Session: "s3"}},
		{KV: &model.KVOp{Verb: model.KVDelete, Key: "g"}},
	} {
		if res := m.Apply(uint64(i+1), cmd); res.Failed() {
			t.Fatalf("step %d: %+v", i, res)
		}
	}
	st := &pstate{m: m, tr: map[string]tracker{
		"j": {},
		"k": {L: m.Snapshot().KV["k"].ModifyIndex, M: 40},
		"g": {DelayFrom: int64(secs(7)), DelayTo: int64(secs(8))},
		"z": {DelayFrom: int64(secs(6)), DelayTo: math.MaxInt64},
	}}
	wantState := strings.Join([]string{
		"g: absent (lock-index issued up to 1); lock-delay ends in [2s, 3s]",
		`j{v="w" flags=7 lock-index=0 free local 5/5}`,
		`k{v="v" flags=0 lock-index=1 held by sess-012 local 4/4} (lock-index issued up to 1); local 4 is index 40`,
		"z: absent; lock-delay ends in [1s, ∞]",
		"sessions: s3(delete lock-delay=0s) sess-012(release lock-delay=1s ttl=30s checks=n1:[serfHealth])",
	}, "\n")
	// The keys come from maps walked in a different order each time; the
	// text must not depend on it.
	for range 20 {
		if got := c.describeState(st); got != wantState {
			t.Fatalf("state:\n%s\nwant\n%s", got, wantState)
		}
	}
	if got := c.describeState(&pstate{m: model.New()}); got != "sessions: none" {
		t.Fatalf("empty state: %q", got)
	}
}
