package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/httpapi/httpapitest"
	"github.com/tenurekv/tenure/model"
)

var sessionSeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `{`, `{} trailing`,
	`{"LockDelay":15}`, `{"LockDelay":"15"}`, `{"LockDelay":"500ns"}`, `{"LockDelay":-1e300}`,
	`{"LockDelay":1e300}`, `{"LockDelay":true}`, `{"LockDelay":{"a":1}}`, `{"LockDelay":-999}`,
	`{"TTL":"10s","Behavior":"delete"}`, `{"TTL":"1ns"}`, `{"TTL":15}`, `{"ttl":"30s","behavior":"release"}`,
	`{"Checks":[]}`, `{"NodeChecks":null}`, `{"Checks":["a","a"],"NodeChecks":["a"]}`,
	`{"ServiceChecks":[{"ID":"x"}]}`, `{"Node":"","Name":"\u0000"}`, `{"Node":"node-a","Checks":["serfHealth"]}`,
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
		for i, id := range cs.Checks {
			if slices.Contains(cs.Checks[i+1:], id) {
				t.Fatalf("%q: check %q bound twice: %v", body, id, cs.Checks)
			}
		}
		if len(body) == 0 && (cs.Node != "node-a" || cs.LockDelay != model.DefaultLockDelay ||
			!slices.Equal(cs.Checks, []string{model.SerfHealthCheckID})) {
			t.Fatalf("empty body lost the defaults: %+v", cs)
		}
	})
}

// fuzzServer is one handler over a fresh double per input.
func fuzzServer(t *testing.T) (http.Handler, *httpapitest.Store) {
	b := httpapitest.New("node-a", httpapitest.NewManualClock(time.Unix(0, 0)))
	return New(b, Options{}), b.Store()
}

func serve(h http.Handler, method, path string, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(body)))
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
		switch rec.Code {
		case http.StatusOK:
			if len(store.Snapshot().Sessions) != 1 {
				t.Fatalf("%q: 200 %s but no session stored", body, rec.Body)
			}
		case http.StatusBadRequest:
			if store.Hash() != before {
				t.Fatalf("%q: rejected with %q but the state changed", body, rec.Body)
			}
		default:
			t.Fatalf("%q: unexpected %d %q", body, rec.Code, rec.Body)
		}
	})
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
		switch rec.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
			if store.Hash() != before {
				t.Fatalf("%q: rejected with %d %q but the state changed", body, rec.Code, rec.Body)
			}
		default:
			t.Fatalf("%q: unexpected %d %q", body, rec.Code, rec.Body)
		}
		if _, err := decodeTxn(body); err == nil && rec.Code == http.StatusBadRequest {
			t.Fatalf("%q: decoded, yet answered 400 %q", body, rec.Body)
		}
	})
}
