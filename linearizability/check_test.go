package linearizability

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/tenurekv/tenure/model"
)

// Generated histories are linearizable by construction (generate applies
// each operation at an instant inside its window), so the checker must
// accept every one: no false alarms, per key and unpartitioned.
func TestGeneratedHistoriesAccepted(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		h, _ := generate(genConfig{Seed: seed, Clients: 6, Keys: 6, Ops: 1500, UnknownRate: 0.03, EventEvery: 5 * time.Millisecond})
		rep, err := Check(h, Options{Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("seed %d per key: %v", seed, err)
		}
		if rep.Partitions < 6 || rep.Ops < 1500 {
			t.Fatalf("seed %d: checked %d ops in %d partitions; the workload is too thin", seed, rep.Ops, rep.Partitions)
		}
	}
	for seed := uint64(1); seed <= 6; seed++ {
		h, _ := generate(genConfig{Seed: seed, Clients: 3, Keys: 3, Ops: 120, UnknownRate: 0.03, EventEvery: 5 * time.Millisecond})
		if _, err := Check(h, Options{Timeout: 20 * time.Second, Whole: true}); err != nil {
			t.Fatalf("seed %d whole: %v", seed, err)
		}
	}
}

// Histories whose txns carry catalog and session ops (S68, S69) are
// accepted too: such a txn is replayed in every partition, its KV ops only
// in their keys' partitions.
func TestGeneratedCatalogTxnHistoriesAccepted(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		h, _ := generate(genConfig{Seed: seed, Clients: 6, Keys: 6, Ops: 1500, UnknownRate: 0.03, EventEvery: 5 * time.Millisecond, CatalogTxns: true})
		if _, err := Check(h, Options{Timeout: 20 * time.Second}); err != nil {
			t.Fatalf("seed %d per key: %v", seed, err)
		}
		h, _ = generate(genConfig{Seed: seed, Clients: 3, Keys: 3, Ops: 120, UnknownRate: 0.03, EventEvery: 5 * time.Millisecond, CatalogTxns: true})
		if _, err := Check(h, Options{Timeout: 20 * time.Second, Whole: true}); err != nil {
			t.Fatalf("seed %d whole: %v", seed, err)
		}
	}
}

// A generated history with one answer corrupted into something no
// linearization can produce must be rejected, in both modes.
func TestGeneratedMutationsRejected(t *testing.T) {
	mutations := map[string]func(e *model.KVEntry){
		"lock index never issued": func(e *model.KVEntry) { e.LockIndex = 1 << 40 },
		"value never written":     func(e *model.KVEntry) { e.Value = []byte("never written") },
		"holder never existed":    func(e *model.KVEntry) { e.Session = "no-such-session" },
		"index from the future":   func(e *model.KVEntry) { e.CreateIndex, e.ModifyIndex = 1<<50, 1<<50 },
	}
	for name, mutate := range mutations {
		for seed := uint64(1); seed <= 3; seed++ {
			h, _ := generate(genConfig{Seed: seed, Clients: 3, Keys: 3, Ops: 120, EventEvery: 5 * time.Millisecond})
			// Corrupt the last successful get: nothing after it can explain the answer.
			i := len(h.Ops) - 1
			for ; i >= 0; i-- {
				if rd := h.Ops[i].Input.Read; rd != nil && rd.Kind == ReadKey && h.Ops[i].Output.OK {
					break
				}
			}
			if i < 0 {
				t.Fatalf("seed %d: no successful get", seed)
			}
			e := h.Ops[i].Output.Entries[0]
			mutate(&e)
			h.Ops[i].Output.Entries = []model.KVEntry{e}
			for _, whole := range []bool{false, true} {
				if _, err := Check(h, Options{Timeout: 20 * time.Second, Whole: whole}); !errors.Is(err, ErrIllegal) {
					t.Errorf("%s, seed %d, whole=%v: got %v, want ErrIllegal", name, seed, whole, err)
				}
			}
		}
	}
}

// The JSON form carries everything the checker needs.
func TestJSONRoundTrip(t *testing.T) {
	h, _ := generate(genConfig{Seed: 7, Clients: 4, Keys: 4, Ops: 400, UnknownRate: 0.05, EventEvery: 5 * time.Millisecond})
	path := filepath.Join(t.TempDir(), "h.json")
	if err := h.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(h)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Fatal("history changed in a JSON round trip")
	}
	if _, err := Check(back, Options{Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var n Nanos
	if err := json.Unmarshal([]byte(`"1.5s"`), &n); err != nil || n != Nanos(1500*time.Millisecond) {
		t.Fatalf("duration string: %v %v", n, err)
	}
	for _, bad := range []string{`"soon"`, `1.5`, `true`} {
		if err := json.Unmarshal([]byte(bad), &n); err == nil {
			t.Errorf("time %s accepted", bad)
		}
	}
}

// slowKeyHistory is forty concurrent writes of key k followed by a read of a
// value none of them wrote: porcupine's search for it is exponential.
func slowKeyHistory() History {
	var h History
	for i := 0; i < 40; i++ {
		h.Ops = append(h.Ops, Op{Client: i, Call: 0, Return: 10,
			Input:  Input{Command: &model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: fmt.Appendf(nil, "v%d", i)}}},
			Output: Output{OK: true}})
	}
	h.Ops = append(h.Ops, Op{Client: 40, Call: 20, Return: 30, Input: Input{Read: &Read{Kind: ReadKey, Key: "k"}},
		Output: Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("nobody")}}}})
	return h
}

// A check that cannot finish in time is a failure, with its artifact, never
// a pass (slowKeyHistory).
func TestTimeoutIsUnknownFailure(t *testing.T) {
	h := slowKeyHistory()
	h.Faults = []Fault{{Name: "isolate n1", Start: 5, End: 25, Details: "leader cut off"}}
	dir := t.TempDir()
	rep, err := Check(h, Options{Timeout: 300 * time.Millisecond, ArtifactDir: dir, Name: "slow",
		Annotations: []porcupine.Annotation{{Tag: "test", Start: 0, Description: "extra note"}}})
	if !errors.Is(err, ErrUnknown) || rep.Verdict != VerdictUnknown || rep.OK() {
		t.Fatalf("got %v, verdict %q; want ErrUnknown", err, rep.Verdict)
	}
	if len(rep.Failed) != 0 || !slices.Equal(rep.Undecided, []string{"key k"}) {
		t.Fatalf("failed %v, undecided %v; want key k undecided and nothing failed", rep.Failed, rep.Undecided)
	}
	for _, f := range []string{"slow.html", "slow.json", "slow.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "slow.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"isolate n1", "leader cut off", "extra note", `set k v=\"v7\" → true`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("visualisation lacks %q", want)
		}
	}
}

// A partition cut short by the timeout is named undecided, not failed, and
// does not hide another partition's violation: key k's search cannot finish
// (as above), key b's read of a value nobody wrote is illegal at once. The
// verdict is illegal, naming only b.
func TestUndecidedDoesNotHideIllegal(t *testing.T) {
	h := slowKeyHistory()
	h.Ops = append(h.Ops,
		Op{Client: 41, Call: 0, Return: 5, Input: Input{Command: &model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "b", Value: []byte("x")}}},
			Output: Output{OK: true}},
		Op{Client: 41, Call: 6, Return: 7, Input: Input{Read: &Read{Kind: ReadKey, Key: "b"}},
			Output: Output{OK: true, Entries: []model.KVEntry{{Key: "b", Value: []byte("y")}}}})
	rep, err := Check(h, Options{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrIllegal) || rep.Verdict != VerdictIllegal {
		t.Fatalf("got %v, verdict %q; want ErrIllegal", err, rep.Verdict)
	}
	if !slices.Equal(rep.Failed, []string{"key b"}) || !slices.Equal(rep.Undecided, []string{"key k"}) {
		t.Fatalf("failed %v, undecided %v; want key b failed, key k undecided", rep.Failed, rep.Undecided)
	}
	if !strings.Contains(err.Error(), "failed: key b; undecided (timed out): key k") {
		t.Errorf("summary %q does not tell the failed from the undecided", err)
	}
}

// Malformed histories get a clear error, nothing is checked, and the
// caller's history is left as it was.
func TestMalformedHistories(t *testing.T) {
	set := func(key string) *model.Command {
		return &model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}}
	}
	lock := func(key string) *model.Command {
		return &model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: key, Session: "s"}}
	}
	create := &model.Command{CreateSession: &model.CreateSession{Node: "n1"}}
	cases := map[string]History{
		"no input":          {Ops: []Op{{Return: 1}}},
		"two inputs":        {Ops: []Op{{Return: 1, Input: Input{Command: set("k"), Read: &Read{Kind: ReadKey, Key: "k"}}}}},
		"returns early":     {Ops: []Op{{Call: 5, Return: 1, Input: Input{Command: set("k")}, Output: Output{OK: true}}}},
		"negative client":   {Ops: []Op{{Client: -1, Return: 1, Input: Input{Command: set("k")}}}},
		"empty command":     {Ops: []Op{{Return: 1, Input: Input{Command: &model.Command{}}}}},
		"read verb as KV":   {Ops: []Op{{Return: 1, Input: Input{Command: &model.Command{KV: &model.KVOp{Verb: model.KVGet, Key: "k"}}}}}},
		"unknown read kind": {Ops: []Op{{Return: 1, Input: Input{Read: &Read{Kind: "scan", Key: "k"}}}}},
		"get without key":   {Ops: []Op{{Return: 1, Input: Input{Read: &Read{Kind: ReadKey}}}}},
		"get two entries": {Ops: []Op{{Return: 1, Input: Input{Read: &Read{Kind: ReadKey, Key: "k"}},
			Output: Output{OK: true, Entries: []model.KVEntry{{Key: "k"}, {Key: "k"}}}}}},
		"get other key": {Ops: []Op{{Return: 1, Input: Input{Read: &Read{Kind: ReadKey, Key: "k"}},
			Output: Output{OK: true, Entries: []model.KVEntry{{Key: "j"}}}}}},
		"set names an entry": {Ops: []Op{{Return: 1, Input: Input{Command: set("k")},
			Output: Output{OK: true, Entries: []model.KVEntry{{Key: "k"}}}}}},
		"refused lock names an entry": {Ops: []Op{{Return: 1, Input: Input{Command: lock("k")},
			Output: Output{Entries: []model.KVEntry{{Key: "k", LockIndex: 1, Session: "s"}}}}}},
		"lock names another key": {Ops: []Op{{Return: 1, Input: Input{Command: lock("k")},
			Output: Output{OK: true, Entries: []model.KVEntry{{Key: "j", LockIndex: 1, Session: "s"}}}}}},
		"info without session": {Ops: []Op{{Return: 1, Input: Input{Read: &Read{Kind: ReadSession}}}}},
		"create without ID":    {Ops: []Op{{Return: 1, Input: Input{Command: create}, Output: Output{OK: true}}}},
		"create ID differs": {Ops: []Op{{Return: 1, Input: Input{Command: &model.Command{CreateSession: &model.CreateSession{ID: "a", Node: "n1"}}},
			Output: Output{OK: true, SessionID: "b"}}}},
		"setup not register": {Setup: []model.Command{*set("k")}},
		"setup rejected":     {Setup: []model.Command{{Register: &model.Register{}}}},
		"negative slack":     {LockDelaySlack: -1},
		"event window":       {Events: []Event{{Kind: "ttl", Earliest: 5, Latest: 1, Sessions: []string{"a"}}}},
		"event both":         {Events: []Event{{Kind: "ttl", Sessions: []string{"a"}, Command: &model.Command{DestroySession: &model.DestroySession{ID: "a"}}}}},
		"event neither":      {Events: []Event{{Kind: "ttl"}}},
		"event KV":           {Events: []Event{{Kind: "ttl", Command: set("k")}}},
		"event empty ID":     {Events: []Event{{Kind: "ttl", Sessions: []string{""}}}},
	}
	for name, h := range cases {
		before, _ := json.Marshal(h)
		rep, err := Check(h, Options{Timeout: time.Second})
		if !errors.Is(err, ErrBadHistory) {
			t.Errorf("%s: got %v, want ErrBadHistory", name, err)
		}
		if rep.Verdict != "" {
			t.Errorf("%s: verdict %q for a malformed history", name, rep.Verdict)
		}
		if after, _ := json.Marshal(h); string(after) != string(before) {
			t.Errorf("%s: Check changed the caller's history", name)
		}
	}
}

// Unknown reads and creates are dropped (they carry no information); other
// unknown operations may have taken effect, or not.
func TestUnknownOutcomes(t *testing.T) {
	set := Op{Client: 0, Call: 0, Unknown: true, Input: Input{Command: &model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}}}}
	read := func(found bool) Op {
		op := Op{Client: 1, Call: 10, Return: 11, Input: Input{Read: &Read{Kind: ReadKey, Key: "k"}}}
		if found {
			op.Output = Output{OK: true, Entries: []model.KVEntry{{Key: "k", Value: []byte("v"), CreateIndex: 3, ModifyIndex: 3}}}
		}
		return op
	}
	for _, found := range []bool{false, true} {
		if _, err := Check(History{Ops: []Op{set, read(found)}}, Options{}); err != nil {
			t.Errorf("found=%v: %v", found, err)
		}
	}
	// Taking effect is one-way: once seen, it cannot be unseen.
	late := read(false)
	late.Call, late.Return = 20, 21
	if _, err := Check(History{Ops: []Op{set, read(true), late}}, Options{}); !errors.Is(err, ErrIllegal) {
		t.Errorf("value seen then gone: %v", err)
	}
	unknownRead := read(true)
	unknownRead.Unknown = true
	unknownCreate := Op{Unknown: true, Input: Input{Command: &model.Command{CreateSession: &model.CreateSession{Node: "n1"}}}}
	rep, err := Check(History{Ops: []Op{unknownRead, unknownCreate}}, Options{})
	if err != nil || rep.Dropped != 2 || rep.Ops != 0 {
		t.Errorf("dropped %d, checked %d, err %v; want 2 dropped", rep.Dropped, rep.Ops, err)
	}
}

// A list answer outside its own prefix is a violation found without search.
func TestListViolations(t *testing.T) {
	h := History{Ops: []Op{{Return: 1, Input: Input{Read: &Read{Kind: ReadPrefix, Key: "a/"}},
		Output: Output{OK: true, Entries: []model.KVEntry{{Key: "b"}}}}}}
	rep, err := Check(h, Options{})
	if !errors.Is(err, ErrIllegal) || len(rep.Violations) != 1 {
		t.Fatalf("got %v, violations %v", err, rep.Violations)
	}
}

// The generator must be deterministic, or failures could not be replayed.
func TestGenerateDeterministic(t *testing.T) {
	cfg := genConfig{Seed: 9, Clients: 5, Keys: 5, Ops: 800, UnknownRate: 0.05, EventEvery: 5 * time.Millisecond}
	a, _ := generate(cfg)
	b, _ := generate(cfg)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("same seed, different histories")
	}
}

// The lock-delay knobs relax exactly what they say.
func TestLockDelayKnobs(t *testing.T) {
	granted := loadCase(t, filepath.Join(historiesDir, "lock-delay-violated.bad.json")).History
	refused := loadCase(t, filepath.Join(historiesDir, "refused-after-delay.bad.json")).History
	for name, tc := range map[string]struct {
		h  History
		ok bool
	}{
		"grant inside delay":                     {granted, false},
		"grant inside delay, delay may be lost":  {with(granted, func(h *History) { h.LockDelayMayBeLost = true }), true},
		"grant inside delay, 13s slack":          {with(granted, func(h *History) { h.LockDelaySlack = Nanos(13 * time.Second) }), true},
		"grant inside delay, 10s slack":          {with(granted, func(h *History) { h.LockDelaySlack = Nanos(10 * time.Second) }), false},
		"refusal after delay, delay may be lost": {with(refused, func(h *History) { h.LockDelayMayBeLost = true }), false},
		"refusal after delay, 70s slack":         {with(refused, func(h *History) { h.LockDelaySlack = Nanos(70 * time.Second) }), true},
	} {
		if _, err := Check(tc.h, Options{}); (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", name, err, tc.ok)
		}
	}
}

func with(h History, f func(*History)) History {
	f(&h)
	return h
}

// A txn whose only op is a session delete (S69) names no key, yet it
// releases the key its session held: the checker replays it in that key's
// partition, so a later read showing the key still held is rejected, and
// the twin showing it released is accepted, per key and whole.
func TestCatalogTxnReachesEveryPartition(t *testing.T) {
	released := model.KVEntry{Key: "k", LockIndex: 1}
	held := released
	held.Session = "sess-A"
	history := func(read model.KVEntry) History {
		end := model.Command{Txn: &model.Txn{Ops: []model.TxnOp{{Session: &model.SessionTxnOp{Verb: model.SessionDelete, ID: "sess-A"}}}}}
		return ruleHistory(
			createAt(0, 0, "sess-A"),
			answered(0, secs(1), lockIn("k", "sess-A"), Output{OK: true}),
			answered(0, secs(2), cmdIn(end), Output{OK: true}),
			answered(1, secs(3), Input{Read: &Read{Kind: ReadKey, Key: "k"}}, Output{OK: true, Entries: []model.KVEntry{read}}),
		)
	}
	for _, whole := range []bool{false, true} {
		if _, err := Check(history(released), Options{Timeout: 10 * time.Second, Whole: whole}); err != nil {
			t.Errorf("whole=%v: key released by the txn's session delete: %v", whole, err)
		}
		if _, err := Check(history(held), Options{Timeout: 10 * time.Second, Whole: whole}); !errors.Is(err, ErrIllegal) {
			t.Errorf("whole=%v: key still held after the txn deleted its session: got %v, want ErrIllegal", whole, err)
		}
	}
}

// A catalog cas compares a server index the checker does not track, so a
// history holding one is refused as malformed rather than misjudged.
func TestCatalogIndexInTxnRefused(t *testing.T) {
	cas := model.Command{Txn: &model.Txn{Ops: []model.TxnOp{{Node: &model.NodeTxnOp{Verb: model.CatalogCAS, Node: "n1", Index: 7}}}}}
	h := ruleHistory(answered(0, 0, cmdIn(cas), Output{OK: true}))
	if _, err := Check(h, Options{Timeout: 10 * time.Second}); !errors.Is(err, ErrBadHistory) {
		t.Fatalf("txn with a catalog cas: got %v, want ErrBadHistory", err)
	}
}

// A session delete in a txn (S69) arms the session's lock-delay on the keys
// it released, as a destroy does (S22): another session's acquire inside
// the delay is rejected, one after it accepted.
func TestCatalogTxnArmsLockDelay(t *testing.T) {
	end := model.Command{Txn: &model.Txn{Ops: []model.TxnOp{{Session: &model.SessionTxnOp{Verb: model.SessionDelete, ID: "sess-A"}}}}}
	history := func(at Nanos) History {
		return ruleHistory(
			createAt(0, 0, "sess-A"),
			createAt(1, secs(0.5), "sess-B"),
			answered(0, secs(1), lockIn("k", "sess-A"), Output{OK: true}),
			answered(0, secs(2), cmdIn(end), Output{OK: true}),
			answered(1, at, lockIn("k", "sess-B"), Output{OK: true}),
		)
	}
	for _, whole := range []bool{false, true} {
		if _, err := Check(history(secs(18)), Options{Timeout: 10 * time.Second, Whole: whole}); err != nil {
			t.Errorf("whole=%v: acquire after the lock-delay: %v", whole, err)
		}
		if _, err := Check(history(secs(3)), Options{Timeout: 10 * time.Second, Whole: whole}); !errors.Is(err, ErrIllegal) {
			t.Errorf("whole=%v: acquire inside the lock-delay the txn's session delete armed: got %v, want ErrIllegal", whole, err)
		}
	}
}
