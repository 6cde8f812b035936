package linearizability

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

func getIn(key string) Input     { return Input{Read: &Read{Kind: ReadKey, Key: key}} }
func listIn(prefix string) Input { return Input{Read: &Read{Kind: ReadPrefix, Key: prefix}} }
func setIn(key, value string) Input {
	return cmdIn(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte(value)}})
}
func found(key, value string) Output {
	return Output{OK: true, Entries: []model.KVEntry{{Key: key, Value: []byte(value)}}}
}

// The per-key split makes one partition per key an operation names, plus
// one for session reads, or for shared operations when no key is named
// (DESIGN.md); nothing else.
func TestPartitionCount(t *testing.T) {
	infoA := answered(0, secs(1), Input{Read: &Read{Kind: ReadSession, Session: "sess-A"}}, Output{OK: true})
	for name, tc := range map[string]struct {
		h    History
		want int
	}{
		"nothing checkable": {History{Ops: []Op{{Unknown: true, Input: getIn("k")}}}, 0},
		"one key":           {ruleHistory(answered(0, secs(1), setIn("k", "v"), Output{OK: true})), 1},
		"a key named only by a get that finds nothing": {ruleHistory(answered(0, secs(1), getIn("k"), Output{})), 1},
		"sessions only":            {ruleHistory(createAt(0, 0, "sess-A")), 1},
		"a key and a session read": {ruleHistory(createAt(0, 0, "sess-A"), infoA, answered(1, secs(1), setIn("k", "v"), Output{OK: true})), 2},
		"two keys":                 {ruleHistory(answered(0, secs(1), setIn("j", "v"), Output{OK: true}), answered(0, secs(2), setIn("k", "v"), Output{OK: true})), 2},
	} {
		rep, err := Check(tc.h, Options{})
		if err != nil || rep.Partitions != tc.want {
			t.Errorf("%s: %d partitions (err %v), want %d", name, rep.Partitions, err, tc.want)
		}
	}
}

// S13, S20: session reads are checked in their own partition even when key
// partitions exist beside it.
func TestSessionReadsCheckedBesideKeys(t *testing.T) {
	h := ruleHistory(createAt(0, 0, "sess-A"), answered(1, secs(0.5), setIn("k", "v"), Output{OK: true}),
		answered(0, secs(1), destroyIn("sess-A"), Output{OK: true}),
		answered(0, secs(2), Input{Read: &Read{Kind: ReadSession, Session: "sess-A"}}, Output{OK: true}))
	for _, whole := range []bool{false, true} {
		if _, err := Check(h, Options{Whole: whole}); !errors.Is(err, ErrIllegal) {
			t.Errorf("whole=%v: session found after its destroy: %v", whole, err)
		}
	}
}

// S45: a list is checked in the partition of every key under its prefix,
// not only the first.
func TestListCheckedUnderEveryKey(t *testing.T) {
	h := func(y string) History {
		return ruleHistory(answered(0, secs(1), setIn("a/x", "1"), Output{OK: true}),
			answered(0, secs(2), setIn("a/y", "2"), Output{OK: true}),
			answered(1, secs(3), listIn("a/"), Output{OK: true, Entries: []model.KVEntry{
				{Key: "a/x", Value: []byte("1")}, {Key: "a/y", Value: []byte(y)}}}))
	}
	if _, err := Check(h("2"), Options{}); err != nil {
		t.Fatalf("true list: %v", err)
	}
	rep, err := Check(h("never written"), Options{})
	if !errors.Is(err, ErrIllegal) || !slices.Equal(rep.Failed, []string{"key a/y"}) {
		t.Fatalf("list with a wrong a/y: failed %v, err %v; want key a/y", rep.Failed, err)
	}
}

// Only the partitions without a linearization are named as failed, and a
// key that no operation checks (named only by an answer outside its
// request) hides none after it.
func TestFailedPartitionsNamed(t *testing.T) {
	h := ruleHistory(
		answered(0, secs(1), listIn("a/"), Output{OK: true, Entries: []model.KVEntry{{Key: "b"}}}),
		answered(0, secs(2), setIn("c", "v"), Output{OK: true}),
		answered(1, secs(3), getIn("c"), found("c", "never written")),
		answered(0, secs(4), setIn("d", "v"), Output{OK: true}),
		answered(1, secs(5), getIn("d"), found("d", "v")),
	)
	rep, err := Check(h, Options{})
	if !errors.Is(err, ErrIllegal) || len(rep.Violations) != 1 || !slices.Equal(rep.Failed, []string{"key c"}) {
		t.Fatalf("failed %v, violations %v, err %v; want key c and the list violation", rep.Failed, rep.Violations, err)
	}
}

// The error names what failed and where the artifacts are, and nothing
// that is not there.
func TestReportSummary(t *testing.T) {
	outside := ruleHistory(answered(0, 0, listIn("a/"), Output{OK: true, Entries: []model.KVEntry{{Key: "b"}}}))
	_, err := Check(outside, Options{})
	want := `history is not linearizable: illegal: 1 ops in 0 partitions; list "a/" (client 0) returned key "b" outside the prefix`
	if err == nil || err.Error() != want {
		t.Fatalf("error %q\nwant  %q", err, want)
	}
	bad := ruleHistory(answered(0, secs(1), getIn("c"), found("c", "v")))
	dir := t.TempDir()
	_, err = Check(bad, Options{ArtifactDir: dir, Name: "x"})
	base := filepath.Join(dir, "x")
	want = "history is not linearizable: illegal: 1 ops in 1 partitions; failed: key c; see " + base + ".html, " + base + ".json, " + base + ".txt"
	if err == nil || err.Error() != want {
		t.Fatalf("error %q\nwant  %q", err, want)
	}
}

// A visualisation asked for but not written is an error, not a pass.
func TestVisualizeFailureReported(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := ruleHistory(answered(0, secs(1), setIn("k", "v"), Output{OK: true}))
	rep, err := Check(h, Options{Visualize: true, ArtifactDir: filepath.Join(file, "under")})
	if err == nil || !strings.Contains(err.Error(), "artifacts") || rep.Verdict != VerdictOK {
		t.Fatalf("verdict %q, err %v; want ok with an artifacts error", rep.Verdict, err)
	}
}

// An unknown write may take effect after everything else, even after an
// op that is called and answered at the history's last instant.
func TestUnknownMayApplyLast(t *testing.T) {
	h := ruleHistory(Op{Client: 0, Call: secs(1), Unknown: true, Input: setIn("k", "v")},
		Op{Client: 1, Call: secs(10), Return: secs(10), Input: getIn("k")})
	if _, err := Check(h, Options{}); err != nil {
		t.Fatal(err)
	}
}

// normalize gives server-initiated events a client of their own, after
// every recorded client, so they get their own row in the visualisation.
func TestEventsGetTheirOwnClient(t *testing.T) {
	ev := Event{Kind: "ttl", Earliest: 1, Latest: 2, Sessions: []string{"a"}}
	for _, tc := range []struct {
		clients []int
		want    int
	}{{nil, 0}, {[]int{0}, 1}, {[]int{0, 3, 1}, 4}} {
		h := History{Events: []Event{ev}}
		for _, c := range tc.clients {
			h.Ops = append(h.Ops, Op{Client: c, Return: 1, Input: setIn("k", "v"), Output: Output{OK: true}})
		}
		recs, _, _, err := normalize(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := recs[len(recs)-1].client; got != tc.want {
			t.Errorf("clients %v: event client %d, want %d", tc.clients, got, tc.want)
		}
	}
}

// Each index check that follows a write of its key inside one txn doubles
// the readings tried, so at most txnKeyCap are accepted; reads and plain
// writes cost nothing.
func TestLateIndexChecksBounded(t *testing.T) {
	ci := model.KVOp{Verb: model.KVCheckIndex, Key: "k", Index: 7}
	set := model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}
	get := model.KVOp{Verb: model.KVGet, Key: "k"}
	repeat := func(op model.KVOp, n int) []model.KVOp { return slices.Repeat([]model.KVOp{op}, n) }
	for name, tc := range map[string]struct {
		ops []model.KVOp
		bad bool
	}{
		"cap after a write":      {append([]model.KVOp{set}, repeat(ci, txnKeyCap)...), false},
		"one over after a write": {append([]model.KVOp{set}, repeat(ci, txnKeyCap+1)...), true},
		"writes only":            {repeat(set, txnKeyCap+2), false},
		"after a read":           {append([]model.KVOp{get}, repeat(ci, txnKeyCap+1)...), false},
	} {
		h := ruleHistory(Op{Call: secs(1), Unknown: true, Input: txnIn(tc.ops...)})
		_, err := Check(h, Options{})
		if errors.Is(err, ErrBadHistory) != tc.bad || (!tc.bad && err != nil) {
			t.Errorf("%s: %v, want malformed=%v", name, err, tc.bad)
		}
	}
}

// S45: a list answering a key twice is a violation found without search.
func TestListDuplicateIsViolation(t *testing.T) {
	h := ruleHistory(answered(0, secs(1), setIn("a/x", "v"), Output{OK: true}),
		answered(1, secs(2), listIn("a/"), Output{OK: true, Entries: []model.KVEntry{{Key: "a/x", Value: []byte("v")}, {Key: "a/x", Value: []byte("v")}}}))
	rep, err := Check(h, Options{})
	if !errors.Is(err, ErrIllegal) || len(rep.Violations) != 1 {
		t.Fatalf("violations %v, err %v", rep.Violations, err)
	}
}

// S1: only a create issues a session ID; a SessionID echoed in any other
// answer is not an issuance, so it cannot collide with the create's.
func TestOnlyCreatesIssueSessionIDs(t *testing.T) {
	set := answered(1, secs(1), setIn("k", "v"), Output{OK: true, SessionID: "sess-A"})
	if _, err := Check(ruleHistory(createAt(0, 0, "sess-A"), set), Options{}); err != nil {
		t.Fatal(err)
	}
}

// Times are integers or duration strings; anything else, empty input
// included, is an error.
func TestNanosRejectsEmpty(t *testing.T) {
	var n Nanos
	if err := n.UnmarshalJSON(nil); err == nil {
		t.Fatal("empty time accepted")
	}
}

// An event known to have happened at one instant has a window of zero
// width; only a window ending before it starts is malformed.
func TestEventInstantWindow(t *testing.T) {
	h := ruleHistory(createAt(0, 0, "sess-A"))
	h.Events = []Event{{Kind: "ttl-expiry", Earliest: secs(5), Latest: secs(5), Sessions: []string{"sess-A"}}}
	if _, err := Check(h, Options{}); err != nil {
		t.Fatalf("instant event: %v", err)
	}
	h.Events[0].Latest--
	if _, err := Check(h, Options{}); !errors.Is(err, ErrBadHistory) {
		t.Fatalf("event ending before it starts: %v", err)
	}
}
