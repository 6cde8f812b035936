package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/httpapitest"
	"github.com/tenurekv/tenure/model"
)

// The token, policy and role write endpoints under fuzzing (S87, S88): whatever
// the body, the answer is a success or a refusal with a one-line reason,
// and a refusal changes nothing.

const (
	fuzzMgmt = "8f0b5a2e-0000-4000-8000-00000000f022"
	// fuzzReader holds acl = "read": its writes are refused for ACLs.
	fuzzReader = "8f0b5a2e-0000-4000-8000-00000000f0a1"
	// fuzzTokenID, fuzzPolicyID and fuzzRoleID are the token, policy and
	// role the update targets name; the double picks the policy's and the
	// role's IDs, in sequence.
	fuzzTokenID  = "8f0b5a2e-0000-4000-8000-00000000f070"
	fuzzPolicyID = "00000000-0000-4000-8000-000000000002"
	fuzzRoleID   = "00000000-0000-4000-8000-000000000003"
)

// aclWriteTargets are the writes a fuzz input goes to, by its kind byte.
var aclWriteTargets = []string{
	"/v1/acl/token",
	"/v1/acl/token/" + fuzzTokenID,
	"/v1/acl/policy",
	"/v1/acl/policy/" + fuzzPolicyID,
	"/v1/acl/role",
	"/v1/acl/role/" + fuzzRoleID,
}

// aclFuzzServer is a handler with ACLs on (default deny) over a fresh
// double holding the management token, a policy that reads ACLs, the
// token fuzzReader with it, and the update targets (a role with that policy).
func aclFuzzServer(t *testing.T) (http.Handler, *httpapitest.Store) {
	t.Helper()
	b := httpapitest.New("node-a", clocktest.NewManual(time.Unix(0, 0)))
	if err := b.Store().InitACL(fuzzMgmt); err != nil {
		t.Fatalf("init ACL: %v", err)
	}
	h := New(b, Options{ACL: ACLOptions{Resolver: acl.NewResolver(acl.Config{Enabled: true, DefaultPolicy: "deny",
		Datacenter: "dc1", NodeName: "node-a"})}})
	rec := serveAs(h, fuzzMgmt, http.MethodPut, "/v1/acl/policy", []byte(`{"Name":"acl-read","Rules":"acl = \"read\""}`))
	var pol struct{ ID string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &pol) != nil || pol.ID != fuzzPolicyID {
		// The double draws IDs in sequence, so the first policy's is fixed.
		t.Fatalf("setup: create policy: %d %s, want ID %s", rec.Code, rec.Body, fuzzPolicyID)
	}
	rec = serveAs(h, fuzzMgmt, http.MethodPut, "/v1/acl/token",
		[]byte(`{"AccessorID":"`+fuzzTokenID+`","SecretID":"`+fuzzReader+`","Policies":[{"Name":"acl-read"}]}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("setup: create token: %d %s", rec.Code, rec.Body)
	}
	rec = serveAs(h, fuzzMgmt, http.MethodPut, "/v1/acl/role", []byte(`{"Name":"readers","Policies":[{"Name":"acl-read"}]}`))
	var role struct{ ID string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &role) != nil || role.ID != fuzzRoleID {
		t.Fatalf("setup: create role: %d %s, want ID %s", rec.Code, rec.Body, fuzzRoleID)
	}
	return h, b.Store()
}

// serveAs answers one request made with token.
func serveAs(h http.Handler, token, method, path string, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(string(body)))
	req.Header.Set("X-Consul-Token", token)
	h.ServeHTTP(rec, req)
	return rec
}

// aclWriteOutcome is the property: a 2xx answers a JSON object; a 4xx
// answers one non-empty line and changed nothing (state hash and applied
// entries as before); nothing else is answered. No body of these writes
// makes Consul's documented 5xx cases (no leader, an old root name as
// the request's token) happen, so a 5xx fails too.
func aclWriteOutcome(code int, body string, changed bool) error {
	switch {
	case code >= 200 && code < 300:
		var v map[string]any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return fmt.Errorf("%d with a body that is no JSON object: %v", code, err)
		}
	case code >= 400 && code < 500:
		if changed {
			return fmt.Errorf("refused with %d, yet the state changed", code)
		}
		if reason := strings.TrimSuffix(body, "\n"); reason == "" || strings.ContainsAny(reason, "\r\n") {
			return fmt.Errorf("refused with %d and a reason that is not one line: %q", code, body)
		}
	default:
		return fmt.Errorf("unexpected status %d: %q", code, body)
	}
	return nil
}

// aclWriteProperty sends body to the write kind picks, as the management
// token or (kinds in the second band of targets) the ACL reader, on h over
// store, and checks aclWriteOutcome; the reader's writes must be refused.
func aclWriteProperty(h http.Handler, store *httpapitest.Store, kind uint8, body []byte) error {
	path := aclWriteTargets[int(kind)%len(aclWriteTargets)]
	token := fuzzMgmt
	if int(kind)/len(aclWriteTargets)%2 == 1 {
		token = fuzzReader
	}
	hash, applies := store.Hash(), store.Applies()
	rec := serveAs(h, token, http.MethodPut, path, body)
	changed := store.Hash() != hash || store.Applies() != applies
	if err := aclWriteOutcome(rec.Code, rec.Body.String(), changed); err != nil {
		return fmt.Errorf("PUT %s as %s: %w", path, token, err)
	}
	// A body the endpoint cannot take is refused before the token is
	// asked (400 whatever the token, as in Consul); any other is 403.
	if token == fuzzReader && rec.Code < 400 {
		return fmt.Errorf("PUT %s with acl:read only answered %d %q", path, rec.Code, rec.Body)
	}
	return nil
}

// aclWriteSeeds are bodies for every target: valid ones, each field's
// wrong types and bounds, names in use, unknown links and fields.
var aclWriteSeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `{`, `{} {}`, `{"Name":"a"} trailing`,
	`{"Description":"d","Policies":[{"Name":"acl-read"}]}`,
	`{"Policies":[{"ID":"` + fuzzPolicyID + `"}],"Local":true}`,
	`{"Policies":[{"Name":"nope"}]}`, `{"Policies":[{}]}`, `{"Policies":[null]}`, `{"Policies":{"Name":"x"}}`,
	`{"Roles":[{"Name":"nope"}]}`, `{"ServiceIdentities":[{"ServiceName":"web","Datacenters":["dc1"]}]}`,
	`{"ServiceIdentities":[{"ServiceName":""}]}`, `{"ServiceIdentities":[{"ServiceName":"Bad Name!"}]}`,
	`{"NodeIdentities":[{"NodeName":"n1","Datacenter":"dc1"}]}`, `{"NodeIdentities":[{"NodeName":"n1"}]}`,
	`{"TemplatedPolicies":[{"TemplateName":"builtin/service"}]}`, `{"AuthMethod":"m"}`,
	`{"ExpirationTTL":"1h"}`, `{"ExpirationTime":"2030-01-01T00:00:00Z"}`, `{"ExpirationTTL":5}`,
	`{"AccessorID":"` + fuzzTokenID + `"}`, `{"SecretID":"` + fuzzMgmt + `"}`, `{"SecretID":"anonymous"}`,
	`{"AccessorID":"00000000-0000-0000-0000-000000000002"}`, `{"AccessorID":"not-a-uuid"}`, `{"SecretID":"allow"}`,
	`{"CreateTime":"x"}`, `{"Hash":"AAAA","CreateIndex":1,"ModifyIndex":-1}`, `{"Unknown":1}`, `{"name":"lower"}`,
	`{"Name":"p1","Rules":"key_prefix \"\" { policy = \"write\" }"}`, `{"Name":"p2","Rules":"{\"key\":{\"a\":{\"policy\":\"read\"}}}"}`,
	`{"Name":"acl-read","Rules":""}`, `{"Name":"global-management"}`, `{"Name":"bad name"}`, `{"Name":""}`,
	`{"Name":"p3","Rules":"key \"a\" { policy = \"sudo\" }"}`, `{"Name":"p4","Rules":"{{{"}`,
	`{"Name":"p5","Datacenters":["dc1","dc2"]}`, `{"Name":"p6","Datacenters":[""]}`,
	`{"ID":"00000000-0000-0000-0000-000000000001","Name":"x"}`, `{"ID":"` + fuzzPolicyID + `","Name":"renamed"}`,
	`{"Name":"p7","Rules":"acl = \"write\"\noperator = \"write\""}`, `{"Name":"` + strings.Repeat("n", 200) + `"}`,
	`{"Description":"` + strings.Repeat("d", 70000) + `"}`,
	`{"Name":"r1","Policies":[{"Name":"acl-read"}]}`, `{"Name":"readers"}`, `{"Name":"r2","Policies":[{"ID":"nope"}]}`,
	`{"Name":"r3","ServiceIdentities":[{"ServiceName":"web"}],"NodeIdentities":[{"NodeName":"n1","Datacenter":"dc1"}]}`,
	`{"ID":"` + fuzzRoleID + `","Name":"renamed"}`, `{"ID":"` + fuzzPolicyID + `","Name":"r4"}`, `{"Name":"r5","Roles":[{"Name":"readers"}]}`,
}

// FuzzACLWriteEndpoints checks aclWriteProperty on any body sent to the
// token, policy and role create and update endpoints.
func FuzzACLWriteEndpoints(f *testing.F) {
	for _, s := range aclWriteSeeds {
		for kind := range 2 * len(aclWriteTargets) {
			f.Add(uint8(kind), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		h, store := aclFuzzServer(t)
		if err := aclWriteProperty(h, store, kind, body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

// TestACLWritePropertyCatchesBadOutcomes: the property refuses a refusal
// that changed the state, a reason on two lines or none, a 5xx, a 2xx that
// is no JSON object, and a write the reader's token was let make; a
// handler that applies a write before it refuses the body fails it on the
// seeds.
func TestACLWritePropertyCatchesBadOutcomes(t *testing.T) {
	for i, err := range []error{
		aclWriteOutcome(http.StatusBadRequest, "refused", true),
		aclWriteOutcome(http.StatusBadRequest, "two\nlines", false),
		aclWriteOutcome(http.StatusForbidden, "", false),
		aclWriteOutcome(http.StatusInternalServerError, "boom", false),
		aclWriteOutcome(http.StatusOK, "true", true),
	} {
		if err == nil {
			t.Errorf("bad outcome %d passed the property", i)
		}
	}
	if err := aclWriteOutcome(http.StatusOK, `{"AccessorID":"a"}`, true); err != nil {
		t.Errorf("a created token failed the property: %v", err)
	}

	// A stand-in that writes a KV entry before handing the body on: every
	// refused body changes the state.
	h, store := aclFuzzServer(t)
	applyFirst := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := store.Apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "leak", Value: []byte("x")}}); err != nil {
			t.Fatalf("stand-in write: %v", err)
		}
		h.ServeHTTP(w, r)
	})
	if err := aclWriteProperty(applyFirst, store, 2, []byte(`{"Name":""}`)); err == nil {
		t.Error("the property passed a refusal that wrote the state")
	}
	// A stand-in that lets the reader's token write: no 403.
	asMgmt := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-Consul-Token", fuzzMgmt)
		h.ServeHTTP(w, r)
	})
	if err := aclWriteProperty(asMgmt, store, uint8(len(aclWriteTargets)+2), []byte(`{"Name":"by-reader"}`)); err == nil {
		t.Error("the property passed a write made with acl:read only")
	}
	// The real handler passes every seed, each through every target.
	for _, s := range aclWriteSeeds {
		for kind := range 2 * len(aclWriteTargets) {
			h, store := aclFuzzServer(t)
			if err := aclWriteProperty(h, store, uint8(kind), []byte(s)); err != nil {
				t.Errorf("%.80q: %v", s, err)
			}
		}
	}
}
