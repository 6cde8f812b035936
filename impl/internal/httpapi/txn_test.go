package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

type txnKV = map[string]any

func txnBody(t *testing.T, ops ...txnKV) []byte {
	t.Helper()
	wrapped := make([]map[string]txnKV, len(ops))
	for i, op := range ops {
		wrapped[i] = map[string]txnKV{"KV": op}
	}
	b, err := json.Marshal(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type txnReply struct {
	Results []struct{ KV *api.KVPair }
	Errors  []struct {
		OpIndex int
		What    string
	}
}

// A guarded write: check-session ahead of a set applies only while the
// named session holds the lock (S42, S44).
func TestTxnCheckSession(t *testing.T) {
	f := newFixture(t)
	s1, s2 := f.session(nil), f.session(nil)
	f.acquire("lock", s1, "")
	ok, resp, _, err := f.client.KV().Txn(api.KVTxnOps{
		{Verb: api.KVCheckSession, Key: "lock", Session: s1},
		{Verb: api.KVSet, Key: "guarded", Value: []byte("by s1")},
	}, nil)
	if err != nil || !ok || len(resp.Results) != 2 || resp.Results[0].Session != s1 || resp.Results[0].Value != nil {
		t.Fatalf("guarded write by holder: ok=%v %+v %v", ok, resp, err)
	}
	before := f.b.Store().Hash()
	r := f.do(http.MethodPut, "/v1/txn", txnBody(t,
		txnKV{"Verb": "check-session", "Key": "lock", "Session": s2},
		txnKV{"Verb": "set", "Key": "guarded", "Value": []byte("by s2")}))
	want(t, "guarded write by non-holder", r, http.StatusConflict, "")
	wantBody := fmt.Sprintf(`{"Results":null,"Errors":[{"OpIndex":0,"What":"failed session check for key \"lock\", current session \"%s\" != \"%s\""}]}`, s1, s2)
	if r.text() != wantBody {
		t.Fatalf("409 body\n got %s\nwant %s", r.text(), wantBody)
	}
	if f.b.Store().Hash() != before {
		t.Fatal("a failed txn changed the state")
	}
	if p := f.get("guarded"); string(p.Value) != "by s1" {
		t.Fatalf("guarded value %q", p.Value)
	}
}

// check-sequencer carries the LockIndex in Index and fails once the key has
// changed hands, even if the same session holds it again (S43).
func TestTxnCheckSequencer(t *testing.T) {
	f := newFixture(t)
	s1 := f.session(nil)
	f.acquire("lock", s1, "")
	seq := f.get("lock").LockIndex
	op := func(idx uint64) []byte {
		return txnBody(t, txnKV{"Verb": "check-sequencer", "Key": "lock", "Session": s1, "Index": idx},
			txnKV{"Verb": "set", "Key": "res", "Value": []byte(fmt.Sprint(idx))})
	}
	r := f.do(http.MethodPut, "/v1/txn", op(seq))
	want(t, "current sequencer", r, http.StatusOK, "")
	got := decode[txnReply](t, r)
	if len(got.Results) != 2 || got.Results[0].KV.LockIndex != seq || got.Results[0].KV.Session != s1 {
		t.Fatalf("sequencer result %s", r.text())
	}
	if _, _, err := f.client.KV().Release(&api.KVPair{Key: "lock", Session: s1}, nil); err != nil {
		t.Fatal(err)
	}
	f.acquire("lock", s1, "")
	r = f.do(http.MethodPut, "/v1/txn", op(seq))
	want(t, "stale sequencer", r, http.StatusConflict, "")
	if got := decode[txnReply](t, r); len(got.Errors) != 1 || got.Errors[0].OpIndex != 0 || !strings.Contains(got.Errors[0].What, `"lock"`) {
		t.Fatalf("stale sequencer answer %s", r.text())
	}
	if p := f.get("res"); string(p.Value) != fmt.Sprint(seq) {
		t.Fatalf("stale sequencer wrote: %+v", p)
	}
}

// A txn of read verbs is served from a copy of the state: no log entry,
// values included, every failing op reported (S44).
func TestTxnReadOnly(t *testing.T) {
	f := newFixture(t)
	f.put("r/a", "1")
	f.put("r/b", "2")
	applies := f.b.Store().Applies()
	r := f.do(http.MethodPut, "/v1/txn", txnBody(t,
		txnKV{"Verb": "get", "Key": "r/a"},
		txnKV{"Verb": "get-tree", "Key": "r/"},
		txnKV{"Verb": "get-or-empty", "Key": "r/none"},
		txnKV{"Verb": "check-not-exists", "Key": "r/none"}))
	want(t, "read txn", r, http.StatusOK, "")
	got := decode[txnReply](t, r)
	if len(got.Results) != 4 || string(got.Results[0].KV.Value) != "1" || string(got.Results[2].KV.Value) != "2" ||
		got.Results[3].KV.Key != "r/none" || got.Results[3].KV.Value != nil || got.Errors != nil {
		t.Fatalf("read txn answer %s", r.text())
	}
	if r.header.Get("X-Consul-KnownLeader") != "true" || r.header.Get("X-Consul-Index") != "" {
		t.Fatalf("read txn headers %v", r.header)
	}
	r = f.do(http.MethodPut, "/v1/txn", txnBody(t,
		txnKV{"Verb": "get", "Key": "r/none"},
		txnKV{"Verb": "check-index", "Key": "r/a", "Index": 999},
		txnKV{"Verb": "bogus", "Key": "r/a"}))
	want(t, "failing read txn", r, http.StatusConflict, "")
	if got := decode[txnReply](t, r); len(got.Errors) != 3 || got.Errors[2].What != `unknown KV verb "bogus"` ||
		got.Errors[0].What != `key "r/none" doesn't exist` {
		t.Fatalf("failing read txn answer %s", r.text())
	}
	if f.b.Store().Applies() != applies {
		t.Fatalf("read-only txns made %d log entries", f.b.Store().Applies()-applies)
	}
}

func TestTxnLockAndDelay(t *testing.T) {
	f := newFixture(t)
	s1 := f.session(&api.SessionEntry{LockDelay: 5 * time.Second})
	s2 := f.session(nil)
	r := f.do(http.MethodPut, "/v1/txn", txnBody(t, txnKV{"Verb": "lock", "Key": "k", "Session": s1, "Value": []byte("v")}))
	want(t, "txn lock", r, http.StatusOK, "")
	if got := decode[txnReply](t, r); got.Results[0].KV.LockIndex != 1 || got.Results[0].KV.Session != s1 {
		t.Fatalf("txn lock result %s", r.text())
	}
	if _, err := f.client.Session().Destroy(s1, nil); err != nil {
		t.Fatal(err)
	}
	applies := f.b.Store().Applies()
	r = f.do(http.MethodPut, "/v1/txn", txnBody(t,
		txnKV{"Verb": "set", "Key": "other", "Value": []byte("x")},
		txnKV{"Verb": "lock", "Key": "k", "Session": s2}))
	want(t, "txn lock under lock-delay", r, http.StatusConflict,
		`{"Results":null,"Errors":[{"OpIndex":1,"What":"failed to lock key \"k\" due to lock delay"}]}`)
	if f.b.Store().Applies() != applies {
		t.Fatal("a lock-delay refusal reached the log")
	}
	f.clock.Advance(5 * time.Second)
	want(t, "txn lock after lock-delay", f.do(http.MethodPut, "/v1/txn", txnBody(t,
		txnKV{"Verb": "lock", "Key": "k", "Session": s2})), http.StatusOK, "")
}

func TestTxnLimitsAndParse(t *testing.T) {
	f := newFixture(t)
	ops := make([]txnKV, 129)
	for i := range ops {
		ops[i] = txnKV{"Verb": "set", "Key": fmt.Sprint("k", i)}
	}
	applies := f.b.Store().Applies()
	want(t, "129 ops", f.do(http.MethodPut, "/v1/txn", txnBody(t, ops...)),
		http.StatusRequestEntityTooLarge, "Transaction contains too many operations (129 > 128)")
	if f.b.Store().Applies() != applies {
		t.Fatal("an oversized txn reached the log")
	}
	want(t, "128 ops", f.do(http.MethodPut, "/v1/txn", txnBody(t, ops[:128]...)), http.StatusOK, "")
	before := f.b.Store().Hash()
	cases := []struct{ body, want string }{
		{``, "Failed to parse body: EOF"},
		{`{`, "Failed to parse body: unexpected EOF"},
		{`[{"KV":{"Verb":"set","Key":"a","Value":"%%%"}}]`, "Failed to parse body: illegal base64 data at input byte 0"},
		{`[{"KV":{"Verb":"set","Key":"a","Bogus":1}}]`, `Failed to parse body: json: unknown field "Bogus"`},
		{`[{"Node":{"Verb":"get","Node":{"Node":"n1","Bogus":1}}}]`, `Failed to parse body: json: unknown field "Bogus"`},
		{`[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"c","Definition":{"Interval":"soon"}}}}]`,
			`Failed to parse body: check definition: time: invalid duration "soon"`},
	}
	for _, tc := range cases {
		want(t, tc.body, f.do(http.MethodPut, "/v1/txn", []byte(tc.body)), http.StatusBadRequest, tc.want)
	}
	big := strings.Repeat("x", 512*1024+1)
	r := f.do(http.MethodPut, "/v1/txn", txnBody(t, txnKV{"Verb": "set", "Key": "big", "Value": []byte(big)}))
	want(t, "oversized body", r, http.StatusRequestEntityTooLarge, "")
	if !strings.HasPrefix(r.text(), "Request body(") {
		t.Fatalf("oversized body text %q", r.text())
	}
	// An empty key fails its op, not the request.
	r = f.do(http.MethodPut, "/v1/txn", txnBody(t, txnKV{"Verb": "set", "Key": ""}))
	want(t, "empty key", r, http.StatusConflict, `{"Results":null,"Errors":[{"OpIndex":0,"What":"Missing key name"}]}`)
	if f.b.Store().Hash() != before {
		t.Fatal("a rejected txn changed the state")
	}
}
