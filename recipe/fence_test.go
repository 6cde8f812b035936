package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func setOp(key, value string) api.TxnOps {
	return api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: []byte(value)}}}
}

func readValue(t *testing.T, c *Client, key string) string {
	t.Helper()
	p, _, err := c.API.KV().Get(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		return ""
	}
	return string(p.Value)
}

// TestFenceRejectsStaleSequencer: a write guarded by the current holder's
// sequencer lands; one guarded by an earlier holding period is refused with
// ErrStaleSequencer and changes nothing.
func TestFenceRejectsStaleSequencer(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	key, res := uniq("fence-lock"), uniq("fence-resource")
	l, err := c.Lock(LockOptions{Key: key, Session: SessionOptions{TTL: 10 * time.Second, LockDelay: NoLockDelay, Checks: noTTLChecks}})
	if err != nil {
		t.Fatal(err)
	}
	h1, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := h1.Sequencer()
	if _, err := c.Fence(ctx, old, setOp(res, "one")); err != nil {
		t.Fatalf("current holder's fenced write: %v", err)
	}
	if err := h1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h2, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)

	_, err = c.Fence(ctx, old, setOp(res, "stale"))
	var fe *FenceError
	if !errors.Is(err, ErrStaleSequencer) || !errors.As(err, &fe) {
		t.Fatalf("stale sequencer %v: err = %v, want ErrStaleSequencer", old, err)
	}
	t.Logf("refusal: %v (fallback %v)", err, fe.Fallback)
	if fe.Fallback == isTenure(t, c) {
		t.Errorf("Fallback = %v: the guard must be check-sequencer exactly when the server knows it", fe.Fallback)
	}
	if got := readValue(t, c, res); got != "one" {
		t.Fatalf("resource = %q after a refused write, want %q", got, "one")
	}
	results, err := c.Fence(ctx, h2.Sequencer(), setOp(res, "two"))
	if err != nil {
		t.Fatalf("new holder's fenced write: %v", err)
	}
	if len(results) != 1 || results[0].KV == nil || results[0].KV.Key != res {
		t.Errorf("results %+v, want the set's entry only", results)
	}
	if got := readValue(t, c, res); got != "two" {
		t.Fatalf("resource = %q, want %q", got, "two")
	}
}

// TestFenceSurvivesReissue is SPEC S34's example: one session holds a key,
// releases it, the key is deleted and the same session acquires it again.
// Consul reissues LockIndex 1, so check-session alone would accept the old
// sequencer; Fence must refuse it on both servers.
func TestFenceSurvivesReissue(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	key, res := uniq("reissue-lock"), uniq("reissue-resource")
	sid := testSession(t, c, SessionOptions{TTL: 10 * time.Second, LockDelay: NoLockDelay, Checks: noTTLChecks})
	l, err := c.Lock(LockOptions{Key: key, SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	h1, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := h1.Sequencer()
	if err := h1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.API.KV().Delete(key, nil); err != nil {
		t.Fatal(err)
	}
	h2, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	now := h2.Sequencer()
	t.Logf("old %v (modify %d), new %v (modify %d)", old, old.ModifyIndex, now, now.ModifyIndex)

	// The guard a naive client would use does accept the stale holder on
	// Consul: this is the reissue the fence must see through.
	ok, _, _, err := c.API.Txn().Txn(api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: key, Session: old.Session}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("check-session rejected the live holder's own session")
	}
	if _, err := c.Fence(ctx, old, setOp(res, "stale")); !errors.Is(err, ErrStaleSequencer) {
		t.Fatalf("reissued period's old sequencer: err = %v, want ErrStaleSequencer", err)
	}
	if got := readValue(t, c, res); got != "" {
		t.Fatalf("resource written by a stale holder: %q", got)
	}
	if _, err := c.Fence(ctx, now, setOp(res, "fresh")); err != nil {
		t.Fatalf("current sequencer: %v", err)
	}
}

// TestFenceRefusesIncompleteSequencer: bad input gets an error, not a write.
func TestFenceRefusesIncompleteSequencer(t *testing.T) {
	c := fakeClient(t, nil)
	for _, s := range []Sequencer{{}, {Key: "k"}, {Session: "s"}} {
		if _, err := c.Fence(context.Background(), s, nil); err == nil {
			t.Errorf("Fence(%v) succeeded", s)
		}
	}
	big := make(api.TxnOps, maxTxnOps-1)
	if _, err := c.Fence(context.Background(), Sequencer{Key: "k", Session: "s"}, big); err == nil {
		t.Error("Fence accepted more ops than fit beside the guard")
	}
}

// TestFenceLearnsTheServer: against a server that does not know
// check-sequencer (Consul's answer, scripted), Fence falls back to
// check-session plus check-index with the acquire's ModifyIndex, and asks
// only once per client; a guarded op's failure is a TxnError, not a fence
// failure.
func TestFenceLearnsTheServer(t *testing.T) {
	var sent [][]string // verbs of each txn
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		var ops api.TxnOps
		if err := json.NewDecoder(r.Body).Decode(&ops); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var verbs []string
		for _, op := range ops {
			verbs = append(verbs, fmt.Sprintf("%s:%d", op.KV.Verb, op.KV.Index))
		}
		sent = append(sent, verbs)
		switch {
		case ops[0].KV.Verb == "check-sequencer":
			w.WriteHeader(409)
			fmt.Fprint(w, `{"Results":null,"Errors":[{"OpIndex":0,"What":"unknown KV operation: check-sequencer"}]}`)
		case ops[2].KV.Key == "bad":
			w.WriteHeader(409)
			fmt.Fprint(w, `{"Results":null,"Errors":[{"OpIndex":2,"What":"failed to set key \"bad\", index is stale"}]}`)
		default:
			fmt.Fprint(w, `{"Results":[{"KV":{"Key":"k"}},{"KV":{"Key":"k"}},{"KV":{"Key":"r"}}],"Errors":null}`)
		}
	})
	seq := Sequencer{Key: "k", LockIndex: 3, Session: "s", ModifyIndex: 42}
	res, err := c.Fence(context.Background(), seq, setOp("r", "v"))
	if err != nil || len(res) != 1 || res[0].KV.Key != "r" {
		t.Fatalf("first fence: %+v, %v", res, err)
	}
	_, err = c.Fence(context.Background(), seq, api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: "bad", Index: 1}}})
	var te *TxnError
	if !errors.As(err, &te) || errors.Is(err, ErrStaleSequencer) || te.Errors[0].OpIndex != 0 {
		t.Fatalf("failed guarded op: %v, want a TxnError at the caller's op 0", err)
	}
	if want := `recipe: fenced txn failed: op 0: failed to set key "bad", index is stale`; err.Error() != want {
		t.Errorf("TxnError says %q, want %q", err, want)
	}
	want := "[[check-sequencer:3 set:0] [check-session:0 check-index:42 set:0] [check-session:0 check-index:42 cas:1]]"
	if got := fmt.Sprint(sent); got != want {
		t.Errorf("txns sent %s, want %s", got, want)
	}
	if _, err := c.Fence(context.Background(), Sequencer{Key: "k", LockIndex: 3, Session: "s"}, nil); err == nil {
		t.Error("fallback fence without a ModifyIndex succeeded")
	}
}

// txnFake is a client whose txns are answered by answer (status, body);
// the ops of every txn sent are kept in the returned slice.
func txnFake(t *testing.T, answer func(ops api.TxnOps) (int, string)) (*Client, *[]api.TxnOps) {
	sent := &[]api.TxnOps{}
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		var ops api.TxnOps
		if r.URL.Path != "/v1/txn" || json.NewDecoder(r.Body).Decode(&ops) != nil {
			http.Error(w, "unexpected "+r.URL.Path, 400)
			return
		}
		*sent = append(*sent, ops)
		code, body := answer(ops)
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	})
	return c, sent
}

// TestFenceAnswers: how Fence reads a tenure-style server's answers. The
// guard takes one op, so 126 of the caller's ops still fit beside the
// fallback's two; a guard-only txn returns no results and no error; null
// entries in Errors are skipped; and a guard failure that names
// check-sequencer without calling it unknown is a stale sequencer, not a
// sign of Consul.
func TestFenceAnswers(t *testing.T) {
	seq := Sequencer{Key: "k", LockIndex: 3, Session: "s", ModifyIndex: 9}
	ok := func(ops api.TxnOps) (int, string) {
		return 200, `{"Results":[` + strings.Repeat(`{"KV":{"Key":"k"}},`, len(ops)-1) + `{"KV":{"Key":"k"}}]}`
	}
	t.Run("most ops", func(t *testing.T) {
		c, sent := txnFake(t, ok)
		ops := make(api.TxnOps, maxTxnOps-2)
		for i := range ops {
			ops[i] = setOp("r", "v")[0]
		}
		res, err := c.Fence(context.Background(), seq, ops)
		if err != nil || len(res) != len(ops) || len(*sent) != 1 || len((*sent)[0]) != maxTxnOps-1 {
			t.Fatalf("Fence with %d ops = %d results, %v; sent %d txns", len(ops), len(res), err, len(*sent))
		}
	})
	t.Run("guard only", func(t *testing.T) {
		c, sent := txnFake(t, ok)
		res, err := c.Fence(context.Background(), seq, nil)
		if err != nil || len(res) != 0 || len(*sent) != 1 {
			t.Fatalf("Fence without ops = %+v, %v; sent %v", res, err, *sent)
		}
	})
	t.Run("null errors", func(t *testing.T) {
		c, _ := txnFake(t, func(api.TxnOps) (int, string) {
			return 409, `{"Errors":[null,{"OpIndex":0,"What":"failed sequencer check for key \"k\""}]}`
		})
		_, err := c.Fence(context.Background(), seq, setOp("r", "v"))
		var fe *FenceError
		if !errors.As(err, &fe) || fe.Fallback || !strings.Contains(fe.What, "failed sequencer check") {
			t.Fatalf("Fence = %v, want the guard's FenceError", err)
		}
	})
	t.Run("failure naming the verb", func(t *testing.T) {
		c, sent := txnFake(t, func(api.TxnOps) (int, string) {
			return 409, `{"Errors":[{"OpIndex":0,"What":"check-sequencer: lock index 4 != 3"}]}`
		})
		_, err := c.Fence(context.Background(), seq, setOp("r", "v"))
		var fe *FenceError
		if !errors.As(err, &fe) || fe.Fallback || len(*sent) != 1 {
			t.Fatalf("Fence = %v after %d txns, want one check-sequencer refusal", err, len(*sent))
		}
	})
}

// TestUnknownVerb: only a refusal that calls check-sequencer unknown marks
// a server without it.
func TestUnknownVerb(t *testing.T) {
	for what, want := range map[string]bool{
		"unknown KV operation: check-sequencer":   true,
		`unknown KV verb "check-sequencer"`:       true,
		`failed sequencer check for key "k"`:      false,
		"check-sequencer: lock index 4 != 3":      false,
		"unknown KV operation: check-lockindex":   false,
		`failed to set key "bad", index is stale`: false,
	} {
		if got := unknownVerb(what); got != want {
			t.Errorf("unknownVerb(%q) = %v", what, got)
		}
	}
}
