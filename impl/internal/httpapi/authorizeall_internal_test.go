package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/acl"
)

// fakeAuthorizer answers /v1/internal/acl/authorize as a server would:
// names starting "ok" are allowed, others denied, and the token "unknown"
// is not found. It counts the requests and the permissions asked.
type fakeAuthorizer struct {
	requests, asked int
	short           bool // answer one entry too few
}

func (f *fakeAuthorizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/acl/token/self" {
		_, _ = w.Write([]byte(`{"AccessorID":"acc"}`))
		return
	}
	f.requests++
	if r.URL.Query().Get("token") == "unknown" {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("ACL not found"))
		return
	}
	var q []authorizeJSON
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil || len(q) > maxAuthorizations {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.asked += len(q)
	for i := range q {
		allow := strings.HasPrefix(q[i].Segment, "ok")
		q[i].Allow = &allow
	}
	if f.short {
		q = q[:len(q)-1]
	}
	_ = json.NewEncoder(w).Encode(q)
}

// TestDecideAllAsksOncePerBatch: a list's 300 entries over 100 distinct
// names cost a client agent two requests to a server (64 permissions at
// most each) through RemoteAuthorizeAll, where deciding entry by entry
// costs one per distinct name; both decide alike. An unknown token is the
// answer, and a short answer from the server is refused.
func TestDecideAllAsksOncePerBatch(t *testing.T) {
	var ps []Permission
	for i := range 300 {
		name := fmt.Sprintf("ok-%d", i%100)
		if i%2 == 1 {
			name = fmt.Sprintf("no-%d", i%100)
		}
		ps = append(ps, Permission{acl.ResourceService, name, acl.AccessRead})
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/agent/services?token=t", nil)

	batched := &fakeAuthorizer{}
	got, err := decideAll(r, ps, RemoteAuthorize(batched), RemoteAuthorizeAll(batched))
	if err != nil {
		t.Fatal(err)
	}
	single := &fakeAuthorizer{}
	one, err := decideAll(r, ps, RemoteAuthorize(single), nil)
	if err != nil {
		t.Fatal(err)
	}
	if batched.requests != 2 || batched.asked != 100 {
		t.Errorf("batched: %d requests asking %d permissions, want 2 asking 100", batched.requests, batched.asked)
	}
	if single.requests != 100 {
		t.Errorf("one by one: %d requests, want 100 (one per distinct name)", single.requests)
	}
	for i, p := range ps {
		want := strings.HasPrefix(p.Name, "ok")
		if got[i] != want || one[i] != want {
			t.Fatalf("entry %d (%s): batched %v, one by one %v, want %v", i, p.Name, got[i], one[i], want)
		}
	}

	unknown := httptest.NewRequest(http.MethodGet, "/v1/agent/services?token=unknown", nil)
	if _, err := decideAll(unknown, ps, RemoteAuthorize(batched), RemoteAuthorizeAll(batched)); err == nil ||
		!strings.Contains(err.Error(), "ACL not found") {
		t.Errorf("unknown token: %v, want ACL not found", err)
	}
	if _, err := decideAll(r, ps, RemoteAuthorize(batched), RemoteAuthorizeAll(&fakeAuthorizer{short: true})); err == nil {
		t.Error("a server that answers fewer permissions than asked was believed")
	}
}
