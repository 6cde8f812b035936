package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/httpapitest"
	"github.com/tenurekv/tenure/model"
)

var sessionSeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `{`, `{} trailing`,
	`{"LockDelay":15}`, `{"LockDelay":"15"}`, `{"LockDelay":"500ns"}`, `{"LockDelay":-1e300}`,
	`{"LockDelay":1e300}`, `{"LockDelay":true}`, `{"LockDelay":{"a":1}}`, `{"LockDelay":-999}`,
	`{"TTL":"10s","Behavior":"delete"}`, `{"TTL":"1ns"}`, `{"TTL":15}`, `{"ttl":"30s","behavior":"release"}`,
	`{"Checks":[]}`, `{"NodeChecks":null}`, `{"Checks":["a","a"],"NodeChecks":["a"]}`,
	`{"ServiceChecks":[{"ID":"x"}]}`, `{"ServiceChecks":[{"ID":"x","Namespace":"default"}],"Checks":["a","b"]}`, `{"Node":"","Name":"\u0000"}`, `{"Node":"node-a","Checks":["serfHealth"]}`,
}

func FuzzDecodeSessionCreate(f *testing.F) {
	for _, s := range sessionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cs, err := decodeSessionCreate(body, "node-a")
		if err != nil {
			return
		}
		if len(body) == 0 && (cs.Node != "node-a" || cs.LockDelay != model.DefaultLockDelay ||
			cs.Checks != nil || !slices.Equal(cs.NodeChecks, []string{model.SerfHealthCheckID})) {
			t.Fatalf("empty body lost the defaults: %+v", cs)
		}
	})
}

// fuzzServer is one handler over a fresh double per input.
func fuzzServer(t *testing.T) (http.Handler, *httpapitest.Store) {
	b := httpapitest.New("node-a", clocktest.NewManual(time.Unix(0, 0)))
	return New(b, Options{}), b.Store()
}

// serve answers one request. A GET runs with its client already gone, so
// a blocking read (?index) answers after one look instead of parking on
// the double's manual clock.
func serve(h http.Handler, method, path string, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if method == http.MethodGet {
		ctx, cancel := context.WithCancel(req.Context())
		cancel()
		req = req.WithContext(ctx)
	}
	h.ServeHTTP(rec, req)
	return rec
}

// Any body gets an answer from the allowed set, and only a 200 may change
// the state (S8).
func FuzzSessionCreateHandler(f *testing.F) {
	for _, s := range sessionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, store := fuzzServer(t)
		before := store.Hash()
		rec := serve(h, http.MethodPut, "/v1/session/create", body)
		if err := createOutcome(rec.Code, store.Hash() != before, len(store.Snapshot().SessionList(""))); err != nil {
			t.Fatalf("%q: %v (answer %q)", body, err, rec.Body)
		}
	})
}

// createOutcome is the session-create property: 200 creates one session,
// 400 changes nothing, nothing else is answered.
func createOutcome(code int, changed bool, sessions int) error {
	switch {
	case code == http.StatusOK && sessions != 1:
		return fmt.Errorf("200 but %d sessions stored", sessions)
	case code == http.StatusBadRequest && changed:
		return fmt.Errorf("rejected, yet the state changed")
	case code != http.StatusOK && code != http.StatusBadRequest:
		return fmt.Errorf("unexpected status %d", code)
	}
	return nil
}

// txnOutcome is the txn property: 200, or a rejection that changes nothing.
func txnOutcome(code int, changed bool) error {
	switch code {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
		if changed {
			return fmt.Errorf("rejected with %d, yet the state changed", code)
		}
	default:
		return fmt.Errorf("unexpected status %d", code)
	}
	return nil
}

// The fuzz properties must reject known-bad outcomes.
func TestFuzzPropertiesCatchBadOutcomes(t *testing.T) {
	bad := []error{
		createOutcome(http.StatusOK, true, 0),
		createOutcome(http.StatusBadRequest, true, 0),
		createOutcome(http.StatusInternalServerError, false, 0),
		txnOutcome(http.StatusConflict, true),
		txnOutcome(http.StatusRequestEntityTooLarge, true),
		txnOutcome(http.StatusInternalServerError, false),
	}
	for i, err := range bad {
		if err == nil {
			t.Fatalf("bad outcome %d passed the property", i)
		}
	}
	if createOutcome(http.StatusOK, true, 1) != nil || txnOutcome(http.StatusConflict, false) != nil {
		t.Fatal("a good outcome failed the property")
	}
}

var txnSeeds = []string{
	``, `null`, `[]`, `{}`, `[{}]`, `[null]`, `[{"KV":null}]`, `[{"Node":{}}]`,
	`[{"KV":{"Verb":"set","Key":"a","Value":"dg=="}}]`,
	`[{"KV":{"Verb":"lock","Key":"a","Session":"x"}}]`,
	`[{"KV":{"Verb":"check-sequencer","Key":"a","Session":"x","Index":1}}]`,
	`[{"KV":{"Verb":"get-tree","Key":""}},{"KV":{"Verb":"delete-tree","Key":""}}]`,
	`[{"KV":{"Verb":"cas","Key":"a","Index":18446744073709551615}}]`,
	`[{"KV":{"Verb":"set","Key":"a","Value":"!!"}}]`, `[{"KV":{"Verb":7}}]`,
	`[{"KV":{"Verb":"set","Key":"a","Flags":-1}}]`, `[{"kv":{"verb":"get","key":"a"}}]`,
	`[{"Node":{"Verb":"set","Node":{"Node":"n1","Address":"1.1.1.1","TaggedAddresses":{"wlan":"1.1.1.1"},"Meta":{"a":"b"}}}}]`,
	`[{"Service":{"Verb":"cas","Node":"n1","Service":{"ID":"s1","Service":"s1","Port":1,"TaggedAddresses":{"wlan":{"Address":"1.1.1.1","Port":1}},"ModifyIndex":3,"Weights":{"Passing":1},"Proxy":{}}}}]`,
	`[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"c1","Status":"passing","Definition":{"TCP":"1.1.1.1:1","Interval":"40s","TimeoutDuration":80000000000}}}}]`,
	`[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"c1","Definition":{"Interval":"forever"}}}}]`,
	`[{"Session":{"Verb":"delete","Session":{"ID":"s1"}}},{"Node":{"Verb":"get","Node":{"Node":"n1","Bogus":1}}}]`,
}

// Any txn body gets an answer from the allowed set, and only a 200 may
// change the state (S44).
func FuzzTxnHandler(f *testing.F) {
	for _, s := range txnSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, store := fuzzServer(t)
		// Something to read, hold and delete.
		if _, err := store.Apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "a", Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		before := store.Hash()
		rec := serve(h, http.MethodPut, "/v1/txn", body)
		if err := txnOutcome(rec.Code, store.Hash() != before); err != nil {
			t.Fatalf("%q: %v (answer %q)", body, err, rec.Body)
		}
		if _, err := decodeTxn(body); err == nil && rec.Code == http.StatusBadRequest {
			t.Fatalf("%q: decoded, yet answered 400 %q", body, rec.Body)
		}
	})
}
