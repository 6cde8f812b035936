package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

type badCase struct {
	name   string
	method string
	path   string
	body   string
	code   int
	text   string // exact body; "" checks only the status
	prefix string // body prefix, when the tail is Go's own error text
}

// Every rejection answers its status and reason and changes nothing: the
// state hash and the log length are the same afterwards (S8, S39).
func TestRejectionsChangeNothing(t *testing.T) {
	f := newFixture(t)
	// Setup: a critical check and a held key.
	want(t, "register", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "node-a", "Address": "127.0.0.1",
		"Check": map[string]any{"CheckID": "down", "Status": "critical"},
	}), http.StatusOK, "true")
	sid := f.session(nil)
	f.acquire("held", sid, "v")
	big := strings.Repeat("x", 512*1024+1)
	cases := []badCase{
		// Session create (S3, S4, S6, S8, S9).
		{"malformed JSON", put, "/v1/session/create", `{`, 400, "Request decode failed: unexpected EOF", ""},
		{"wrong type", put, "/v1/session/create", `{"TTL":15}`, 400, "", "Request decode failed: json: cannot unmarshal number"},
		{"unit-less lock delay string", put, "/v1/session/create", `{"LockDelay":"15"}`, 400, `Request decode failed: time: missing unit in duration "15"`, ""},
		{"TTL too short", put, "/v1/session/create", `{"TTL":"5s"}`, 400, "Invalid Session TTL '5000000000', must be between [10s=24h0m0s]", ""},
		{"TTL too long", put, "/v1/session/create", `{"TTL":"25h"}`, 400, "Invalid Session TTL '90000000000000', must be between [10s=24h0m0s]", ""},
		{"TTL negative", put, "/v1/session/create", `{"TTL":"-10s"}`, 400, "Invalid Session TTL '-10000000000', must be between [10s=24h0m0s]", ""},
		{"TTL garbage", put, "/v1/session/create", `{"TTL":"soon"}`, 400, `Session TTL 'soon' invalid: time: invalid duration "soon"`, ""},
		{"bad behavior", put, "/v1/session/create", `{"Behavior":"keep"}`, 400, "Invalid Behavior setting 'keep'", ""},
		{"empty node", put, "/v1/session/create", `{"Node":""}`, 400, "Must provide Node", ""},
		{"unknown node", put, "/v1/session/create", `{"Node":"ghost"}`, 400, "Missing node registration", ""},
		{"unknown check", put, "/v1/session/create", `{"NodeChecks":["nope"]}`, 400, "Missing check 'nope' registration", ""},
		{"critical check", put, "/v1/session/create", `{"NodeChecks":["down"]}`, 400, "Check 'down' is in critical state", ""},
		{"destroy without id", put, "/v1/session/destroy/", "", 400, "Missing session", ""},
		{"renew without id", put, "/v1/session/renew/", "", 400, "Missing session", ""},
		{"renew unknown", put, "/v1/session/renew/ghost", "", 404, "Session id 'ghost' not found", ""},
		{"info without id", get, "/v1/session/info/", "", 400, "Missing session", ""},
		{"node without name", get, "/v1/session/node/", "", 400, "Missing node name", ""},
		// KV (S30, S39).
		{"put without key", put, "/v1/kv/", "v", 400, "Missing key name", ""},
		{"get without key", get, "/v1/kv/", "", 400, "Missing key name", ""},
		{"delete without key", del, "/v1/kv/", "", 400, "Missing key name", ""},
		{"cas with acquire", put, "/v1/kv/held?cas=1&acquire=" + sid, "", 400, "Conflicting flags: acquire=" + sid + "&cas=1", ""},
		{"acquire with release", put, "/v1/kv/held?release=a&acquire=b", "", 400, "Conflicting flags: acquire=b&release=a", ""},
		{"delete recurse with cas", del, "/v1/kv/held?recurse&cas=3", "", 400, "Conflicting flags: cas=3&recurse=", ""},
		{"bad flags", put, "/v1/kv/held?flags=abc", "", 400, `Invalid flags "abc": want an unsigned 64-bit integer`, ""},
		{"negative cas", put, "/v1/kv/held?cas=-1", "", 400, `Invalid cas "-1": want an unsigned 64-bit integer`, ""},
		{"bad delete cas", del, "/v1/kv/held?cas=1e3", "", 400, `Invalid cas "1e3": want an unsigned 64-bit integer`, ""},
		{"value too large", put, "/v1/kv/held", big, 413, "", "Request body(524289 bytes) too large, max size: 524288 bytes. See "},
		{"acquire without session", put, "/v1/kv/held?acquire=", "", 400, "missing session", ""},
		{"release without session", put, "/v1/kv/held?release=", "", 400, "missing session", ""},
		{"acquire by unknown session", put, "/v1/kv/held?acquire=ghost", "", 400, `invalid session "ghost"`, ""},
		{"stale and consistent", get, "/v1/kv/held?stale&consistent", "", 400, "Cannot specify ?stale with ?consistent, conflicting semantics.", ""},
		{"stale and consistent on a put", put, "/v1/kv/held?stale&consistent", "", 400, "Cannot specify ?stale with ?consistent, conflicting semantics.", ""},
		{"bad index", get, "/v1/kv/held?index=x", "", 400, "Invalid index", ""},
		{"bad wait", get, "/v1/kv/held?wait=soon", "", 400, "Invalid wait time", ""},
		{"bad max_stale", get, "/v1/kv/held?max_stale=x", "", 400, `Invalid max_stale value "x"`, ""},
		{"missing key", get, "/v1/kv/ghost", "", 404, "", ""},
		// Txn (S44).
		{"txn garbage", put, "/v1/txn", `nope`, 400, "Failed to parse body: invalid character 'o' in literal null (expecting 'u')", ""},
		// Catalog, health, agent (S47, S48).
		{"register garbage", put, "/v1/catalog/register", `[`, 400, "Request decode failed: unexpected end of JSON input", ""},
		{"register without node", put, "/v1/catalog/register", `{"Address":"x"}`, 400, "Must provide node", ""},
		{"register without address", put, "/v1/catalog/register", `{"Node":"n"}`, 400, "Must provide address", ""},
		{"register a service without a name", put, "/v1/catalog/register", `{"Node":"n","Address":"x","Service":{"ID":"web"}}`, 400, "Must provide service name (Service.Service) when service ID is provided", ""},
		{"register bad status", put, "/v1/catalog/register", `{"Node":"n","Address":"x","Check":{"CheckID":"c","Status":"sick"}}`, 400, "Invalid check status 'sick'", ""},
		{"register check of another node", put, "/v1/catalog/register", `{"Node":"n","Address":"x","Check":{"Node":"m","CheckID":"c"}}`, 400, `Check node "m" does not match node "n"`, ""},
		{"register check without id", put, "/v1/catalog/register", `{"Node":"n","Address":"x","Check":{"Status":"passing"}}`, 400, "Must provide check ID", ""},
		{"deregister without node", put, "/v1/catalog/deregister", `{}`, 400, "Must provide node", ""},
		{"catalog node without name", get, "/v1/catalog/node/", "", 400, "Missing node name", ""},
		{"health node without name", get, "/v1/health/node/", "", 400, "Missing node name", ""},
		{"health state missing", get, "/v1/health/state/", "", 400, "Missing check state", ""},
		{"health state bogus", get, "/v1/health/state/sick", "", 400, "Invalid check state 'sick'", ""},
		{"agent pass unknown", put, "/v1/agent/check/pass/ghost", "", 404, `Unknown check ID "ghost". Ensure that the check ID is passed, not the check name.`, ""},
		{"status stale and consistent", get, "/v1/status/leader?stale&consistent", "", 400, "Cannot specify ?stale with ?consistent, conflicting semantics.", ""},
		// Routing (wire conventions).
		{"unknown path", get, "/v1/nope", "", 404, "", "404 page not found"},
		{"kv path without slash", get, "/v1/kv", "", 404, "", "404 page not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := f.b.Store()
			hash, applies := store.Hash(), store.Applies()
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			r := f.do(tc.method, tc.path, body)
			if r.code != tc.code || (tc.text != "" && r.text() != tc.text) || !strings.HasPrefix(r.text(), tc.prefix) {
				t.Fatalf("%s %s: got %d %q, want %d %q%q", tc.method, tc.path, r.code, r.text(), tc.code, tc.text, tc.prefix)
			}
			if r.code != 404 && !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") && r.text() != "" {
				t.Fatalf("error content type %q", r.header.Get("Content-Type"))
			}
			if strings.ContainsAny(r.text(), "\r\n") && !strings.HasPrefix(r.text(), "404 page") {
				t.Fatalf("error body is not one line: %q", r.text())
			}
			if store.Hash() != hash {
				t.Fatal("the rejected request changed the state")
			}
			// Rejections found before proposing cost no log entry; those
			// found by the state machine (node, check, session lookups) may.
			if store.Applies() != applies && !appliedRejection(tc.text) {
				t.Fatalf("the rejected request reached the log (%d entries)", store.Applies()-applies)
			}
		})
	}
	if p := f.get("held"); p.Session != sid || string(p.Value) != "v" {
		t.Fatalf("held key after the rejections: %+v", p)
	}
}

// appliedRejection says whether the state machine, not the handler, found
// the fault: only then may the rejected request have used a log index.
func appliedRejection(text string) bool {
	for _, s := range []string{"Missing node registration", "Missing check", "critical state", "invalid session", "missing session", "Must provide check ID"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ method, path, allow string }{
		{http.MethodPost, "/v1/kv/k", "OPTIONS,GET,PUT,DELETE"},
		{http.MethodGet, "/v1/session/create", "OPTIONS,PUT"},
		{http.MethodDelete, "/v1/session/info/x", "OPTIONS,GET"},
		{http.MethodGet, "/v1/txn", "OPTIONS,PUT"},
		{http.MethodPost, "/v1/agent/check/pass/serfHealth", "OPTIONS,PUT"},
		{http.MethodHead, "/v1/status/leader", "OPTIONS,GET"},
	}
	for _, tc := range cases {
		r := f.do(tc.method, tc.path, nil)
		wantBody := "method " + tc.method + " not allowed"
		if tc.method == http.MethodHead {
			wantBody = "" // HEAD answers carry no body
		}
		want(t, tc.method+" "+tc.path, r, http.StatusMethodNotAllowed, wantBody)
		if r.header.Get("Allow") != tc.allow {
			t.Fatalf("%s %s: Allow %q, want %q", tc.method, tc.path, r.header.Get("Allow"), tc.allow)
		}
	}
	r := f.do(http.MethodOptions, "/v1/kv/k", nil)
	want(t, "OPTIONS", r, http.StatusOK, "")
	if r.header.Get("Allow") != "OPTIONS,GET,PUT,DELETE" {
		t.Fatalf("OPTIONS Allow %q", r.header.Get("Allow"))
	}
}

// A value of exactly 512 KiB is accepted (S39).
func TestKVValueAtLimit(t *testing.T) {
	f := newFixture(t)
	want(t, "512 KiB", f.do(http.MethodPut, "/v1/kv/big", []byte(strings.Repeat("x", 512*1024))), http.StatusOK, "true")
	if p := f.get("big"); len(p.Value) != 512*1024 {
		t.Fatalf("stored %d bytes", len(p.Value))
	}
}

// The compat profile answers Consul's 500 where tenure answers 400, and
// keeps the texts (S9, S30, S39); HTTP-level checks stay 400/413.
func TestCompatProfile(t *testing.T) {
	f := newFixture(t, withOptions(httpapi.Options{Compat: true}))
	cases := []struct {
		method, path, body string
		code               int
		text               string
	}{
		{put, "/v1/session/create", `{"TTL":"5s"}`, 500, "Invalid Session TTL '5000000000', must be between [10s=24h0m0s]"},
		{put, "/v1/session/create", `{"Node":"ghost"}`, 500, "Missing node registration"},
		{put, "/v1/session/create", `{`, 400, "Request decode failed: unexpected EOF"},
		{put, "/v1/kv/k?acquire=ghost", "", 500, `invalid session "ghost"`},
		{put, "/v1/kv/k?flags=abc", "", 500, `strconv.ParseUint: parsing "abc": invalid syntax`},
		{put, "/v1/kv/?flags=abc", "", 400, "Missing key name"},
		{put, "/v1/kv/k?cas=1&acquire=x", "", 400, "Conflicting flags: acquire=x&cas=1"},
	}
	for _, tc := range cases {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		want(t, tc.method+" "+tc.path+" "+tc.body, f.do(tc.method, tc.path, body), tc.code, tc.text)
	}
}

const (
	get = http.MethodGet
	put = http.MethodPut
	del = http.MethodDelete
)
