package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func TestSessionCreateDefaults(t *testing.T) {
	f := newFixture(t)
	id := f.session(nil) // the api client sends no body (S2)
	se, _, err := f.client.Session().Info(id, nil)
	if err != nil || se == nil {
		t.Fatalf("info %s: %v %v", id, se, err)
	}
	if se.ID != id || se.Node != "node-a" || se.LockDelay != 15*time.Second ||
		se.Behavior != "release" || se.TTL != "" || !slices.Equal(se.NodeChecks, []string{"serfHealth"}) ||
		se.CreateIndex == 0 {
		t.Fatalf("defaults: got %+v", se)
	}
	// A create that names no session-level field gets the same defaults.
	r := f.do(http.MethodPut, "/v1/session/create", []byte(`{}`))
	want(t, "create {}", r, http.StatusOK, "")
	if r.header.Get("X-Consul-Index") != "" {
		t.Fatalf("create set X-Consul-Index %q; Consul sets none", r.header.Get("X-Consul-Index"))
	}
	created := decode[map[string]string](t, r)
	if len(created) != 1 || created["ID"] == "" || created["ID"] == id {
		t.Fatalf("create answer %q: want a fresh {\"ID\":...}", r.text())
	}
}

// The session object's JSON keys and their order are Consul's (S1, CONSUL.md §8).
func TestSessionJSONShape(t *testing.T) {
	f := newFixture(t)
	id := f.session(&api.SessionEntry{Name: "n", TTL: "30s", LockDelay: 2 * time.Second})
	r := f.do(http.MethodGet, "/v1/session/info/"+id, nil)
	want(t, "info", r, http.StatusOK, "")
	var raw []json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil || len(raw) != 1 {
		t.Fatalf("info body %q: %v", r.text(), err)
	}
	keys := jsonKeys(t, raw[0])
	wantKeys := []string{"ID", "Name", "Node", "LockDelay", "Behavior", "TTL", "NodeChecks", "ServiceChecks", "CreateIndex", "ModifyIndex"}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("session keys %v, want %v", keys, wantKeys)
	}
	var obj struct{ CreateIndex, ModifyIndex uint64 }
	if err := json.Unmarshal(raw[0], &obj); err != nil || obj.CreateIndex == 0 || obj.CreateIndex != obj.ModifyIndex {
		t.Fatalf("indexes of %s: want CreateIndex = ModifyIndex > 0 (%v)", raw[0], err)
	}
	for _, part := range []string{`"LockDelay":2000000000`, `"TTL":"30s"`, `"ServiceChecks":null`, `"NodeChecks":["serfHealth"]`} {
		if !strings.Contains(string(raw[0]), part) {
			t.Fatalf("session %s lacks %s", raw[0], part)
		}
	}
}

// jsonKeys lists an object's top-level keys in document order.
func jsonKeys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not an object: %v", obj, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("key in %s: %v", obj, err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("value of %v in %s: %v", tok, obj, err)
		}
	}
	return keys
}

func TestSessionRenewAndDestroy(t *testing.T) {
	f := newFixture(t)
	id := f.session(&api.SessionEntry{TTL: "10s"})
	se, _, err := f.client.Session().Renew(id, nil)
	if err != nil || se == nil || se.ID != id || se.TTL != "10s" {
		t.Fatalf("renew: %+v %v", se, err)
	}
	r := f.do(http.MethodPut, "/v1/session/renew/"+id, nil)
	want(t, "raw renew", r, http.StatusOK, "")
	if got := decode[[]api.SessionEntry](t, r); len(got) != 1 || got[0].ID != id {
		t.Fatalf("renew answer %q: want [session]", r.text())
	}
	if _, err := f.client.Session().Destroy(id, nil); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	want(t, "renew destroyed", f.do(http.MethodPut, "/v1/session/renew/"+id, nil),
		http.StatusNotFound, "Session id '"+id+"' not found")
	if se, _, err := f.client.Session().Renew(id, nil); err != nil || se != nil {
		t.Fatalf("api renew of destroyed session: %+v %v, want nil, nil", se, err)
	}
	// Destroying an unknown ID succeeds (S13).
	want(t, "destroy unknown", f.do(http.MethodPut, "/v1/session/destroy/nope", nil), http.StatusOK, "true")
	if list, _, _ := f.client.Session().List(nil); len(list) != 0 {
		t.Fatalf("sessions left: %+v", list)
	}
}

// A TTL session dies at TTL × 2 on the backend's clock unless renewed, and
// renew then answers 404 (S18-S20, through the double's timers).
func TestSessionTTLExpiryThenRenew404(t *testing.T) {
	f := newFixture(t)
	id := f.session(&api.SessionEntry{TTL: "10s"})
	f.clock.Advance(15 * time.Second)
	if _, _, err := f.client.Session().Renew(id, nil); err != nil {
		t.Fatalf("renew at 15s: %v", err)
	}
	f.clock.Advance(19 * time.Second) // 19s after the renew: still alive
	if se, _, _ := f.client.Session().Info(id, nil); se == nil {
		t.Fatal("session expired before TTL × 2 after its renew")
	}
	f.clock.Advance(time.Second)
	eventually(t, "TTL expiry", func() bool {
		se, _, _ := f.client.Session().Info(id, nil)
		return se == nil
	})
	want(t, "renew expired", f.do(http.MethodPut, "/v1/session/renew/"+id, nil),
		http.StatusNotFound, "Session id '"+id+"' not found")
}

func TestSessionNodeAndList(t *testing.T) {
	f := newFixture(t)
	want(t, "empty list", f.do(http.MethodGet, "/v1/session/list", nil), http.StatusOK, "[]")
	want(t, "empty node", f.do(http.MethodGet, "/v1/session/node/node-a", nil), http.StatusOK, "[]")
	want(t, "unknown info", f.do(http.MethodGet, "/v1/session/info/nope", nil), http.StatusOK, "[]")
	a := f.session(&api.SessionEntry{Name: "a"})
	want(t, "register other", f.doJSON(http.MethodPut, "/v1/catalog/register",
		map[string]any{"Node": "node-b", "Address": "10.0.0.2"}), http.StatusOK, "true")
	b, _, err := f.client.Session().CreateNoChecks(&api.SessionEntry{Name: "b", Node: "node-b"}, nil)
	if err != nil {
		t.Fatalf("create on node-b without checks: %v", err)
	}
	list, meta, err := f.client.Session().List(nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	onB, _, err := f.client.Session().Node("node-b", nil)
	if err != nil || len(onB) != 1 || onB[0].ID != b || len(onB[0].NodeChecks) != 0 {
		t.Fatalf("node-b sessions: %+v %v", onB, err)
	}
	// The list's index is the sessions table index: the later create's.
	if meta.LastIndex != onB[0].CreateIndex {
		t.Fatalf("list index %d, want the last create's index %d (session %s came first)", meta.LastIndex, onB[0].CreateIndex, a)
	}
}

// Checks and NodeChecks fixups decide the bound checks, and every read
// shows the three lists as created, Checks only when the fixup kept it
// (CONSUL.md §1, §14; S7, S56).
func TestSessionCreateCheckLists(t *testing.T) {
	f := newFixture(t)
	want(t, "register checks", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "node-a", "Address": "127.0.0.1",
		"Checks": []map[string]any{{"CheckID": "a", "Status": "passing"}, {"CheckID": "w", "Status": "warning"}},
	}), http.StatusOK, "true")
	cases := []struct {
		body          string
		checks, nodes []string
		service       []api.ServiceCheck
	}{
		{`{"Checks":[]}`, nil, nil, nil},
		{`{"NodeChecks":[]}`, nil, nil, nil},
		{`{"Checks":null}`, nil, nil, nil},
		{`{"NodeChecks":["a","w"]}`, nil, []string{"a", "w"}, nil},
		{`{"Checks":["a"]}`, []string{"a"}, []string{"serfHealth"}, nil},
		{`{"Checks":["a"],"NodeChecks":[]}`, nil, nil, nil},
		{`{"checks":["serfHealth"],"nodechecks":["w"]}`, nil, []string{"w"}, nil},
		{`{"Checks":[],"ServiceChecks":[{"ID":"a","Namespace":"default"}]}`, nil, nil, []api.ServiceCheck{{ID: "a", Namespace: "default"}}},
	}
	for _, tc := range cases {
		r := f.do(http.MethodPut, "/v1/session/create", []byte(tc.body))
		want(t, tc.body, r, http.StatusOK, "")
		id := decode[map[string]string](t, r)["ID"]
		se, _, err := f.client.Session().Info(id, nil)
		if err != nil || se == nil {
			t.Fatalf("%s: info: %v", tc.body, err)
		}
		if !slices.Equal(se.NodeChecks, tc.nodes) || !slices.Equal(se.Checks, tc.checks) || !slices.Equal(se.ServiceChecks, tc.service) {
			t.Fatalf("%s: Checks %v NodeChecks %v ServiceChecks %v, want %v %v %v", tc.body,
				se.Checks, se.NodeChecks, se.ServiceChecks, tc.checks, tc.nodes, tc.service)
		}
		raw := f.do(http.MethodGet, "/v1/session/info/"+id, nil).text()
		if strings.Contains(raw, `"Checks"`) != (tc.checks != nil) {
			t.Fatalf("%s: read %s: legacy Checks shown iff kept", tc.body, raw)
		}
	}
	// A session bound through ServiceChecks dies when that check goes
	// critical, like one bound through NodeChecks (S56).
	r := f.do(http.MethodPut, "/v1/session/create", []byte(`{"Checks":[],"ServiceChecks":[{"ID":"w"}]}`))
	want(t, "create bound by ServiceChecks", r, http.StatusOK, "")
	sid := decode[map[string]string](t, r)["ID"]
	want(t, "w critical", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "node-a", "Address": "127.0.0.1", "Check": map[string]any{"CheckID": "w", "Status": "critical"},
	}), http.StatusOK, "true")
	if se, _, _ := f.client.Session().Info(sid, nil); se != nil {
		t.Fatalf("session bound through ServiceChecks survived its check going critical: %+v", se)
	}
}
