package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// mgmtSecret is the initial management token of the ACL fixtures.
const mgmtSecret = "11111111-2222-3333-4444-555555555555"

// aclFixture is a server with ACLs enabled under defaultPolicy, its
// leader's ACL records written with mgmtSecret as initial management; the
// handler is wrapped as an agent wraps it (WithACLHeader), and logs go to
// logs, which tests search for secrets.
type aclFixture struct {
	*fixture
	opts  httpapi.Options
	logs  *bytes.Buffer
	reset string // the bootstrap reset file
}

func newACLFixture(t *testing.T, defaultPolicy string) *aclFixture {
	t.Helper()
	return newACLFixtureWith(t, defaultPolicy, nil)
}

// newACLFixtureWith is newACLFixture with more options set by more.
func newACLFixtureWith(t *testing.T, defaultPolicy string, more func(*httpapi.Options)) *aclFixture {
	t.Helper()
	tokens, err := httpapi.NewAgentTokens(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	opts := httpapi.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace}),
		ACL: httpapi.ACLOptions{
			Resolver: acl.NewResolver(acl.Config{Enabled: true, DefaultPolicy: defaultPolicy, Datacenter: "dc1", NodeName: "node-a",
				AgentRecovery: func() string { return tokens.Get(httpapi.TokenAgentRecovery) }}),
			Tokens:             tokens,
			BootstrapResetFile: filepath.Join(t.TempDir(), "acl-bootstrap-reset"),
		},
	}
	if more != nil {
		more(&opts)
	}
	f := newFixture(t, withOptions(opts))
	if err := f.b.Store().InitACL(mgmtSecret); err != nil {
		t.Fatalf("init ACL: %v", err)
	}
	// The fixture's server serves the bare handler; serve it as an agent
	// does, with the default-policy header.
	f.srv.Config.Handler = httpapi.WithACLHeader(opts.ACL, f.srv.Config.Handler)
	return &aclFixture{fixture: f, opts: opts, logs: logs, reset: opts.ACL.BootstrapResetFile}
}

// call sends a request with token in X-Consul-Token ("" sends none);
// body, if not nil, is sent as JSON (a string as it is).
func (f *aclFixture) call(method, path, token string, body any) reply {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Consul-Token", token)
	}
	return f.send(req)
}

func (f *aclFixture) send(req *http.Request) reply {
	f.t.Helper()
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{code: res.StatusCode, header: res.Header, body: b}
}

// policy creates a policy with rules and returns its ID.
func (f *aclFixture) policy(name, rules string) string {
	f.t.Helper()
	r := f.call("PUT", "/v1/acl/policy", mgmtSecret, map[string]any{"Name": name, "Rules": rules})
	want(f.t, "create policy "+name, r, 200, "")
	return decode[map[string]any](f.t, r)["ID"].(string)
}

// token creates a token with the named policies and returns its secret and
// accessor.
func (f *aclFixture) token(policies ...string) (secret, accessor string) {
	f.t.Helper()
	var links []map[string]string
	for _, p := range policies {
		links = append(links, map[string]string{"Name": p})
	}
	r := f.call("PUT", "/v1/acl/token", mgmtSecret, map[string]any{"Description": "test", "Policies": links})
	want(f.t, "create token", r, 200, "")
	tok := decode[map[string]any](f.t, r)
	return tok["SecretID"].(string), tok["AccessorID"].(string)
}

// unchanged runs do and fails unless the state and its applied count are
// as before: a denied or refused request changes nothing.
func (f *aclFixture) unchanged(what string, do func()) {
	f.t.Helper()
	hash, applies := f.b.Store().Hash(), f.b.Store().Applies()
	do()
	if f.b.Store().Hash() != hash || f.b.Store().Applies() != applies {
		f.t.Fatalf("%s changed the state", what)
	}
}

// TestACLDefaultPolicyHeaderOnEveryAnswer: every answer, success or not,
// names the default policy; with ACLs off it is "allow" (S86).
func TestACLDefaultPolicyHeaderOnEveryAnswer(t *testing.T) {
	f := newACLFixture(t, "deny")
	for _, path := range []string{"/v1/kv/x", "/v1/acl/tokens", "/v1/status/leader", "/v1/nope"} {
		if got := f.call("GET", path, "", nil).header.Get("X-Consul-Default-ACL-Policy"); got != "deny" {
			t.Errorf("%s: X-Consul-Default-ACL-Policy %q", path, got)
		}
	}
	off := httptest.NewServer(httpapi.WithACLHeader(httpapi.ACLOptions{}, http.NotFoundHandler()))
	defer off.Close()
	res, err := http.Get(off.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Consul-Default-ACL-Policy"); got != "allow" {
		t.Errorf("ACLs off: header %q", got)
	}
}

// TestACLSessionAndKVEnforced: S85 end to end under default deny: what the
// anonymous token and a limited token may and may not do, with Consul's
// texts, and that a denied request changes nothing.
func TestACLSessionAndKVEnforced(t *testing.T) {
	f := newACLFixture(t, "deny")
	f.policy("app", `key_prefix "app/" { policy = "write" }
key "app/secret" { policy = "deny" }
session_prefix "" { policy = "write" }`)
	secret, accessor := f.token("app")

	f.unchanged("anonymous session create", func() {
		want(t, "anonymous create", f.call("PUT", "/v1/session/create", "", map[string]any{}), 403,
			`Permission denied: anonymous token lacks permission 'session:write' on "node-a". The anonymous token is used implicitly when a request does not specify a token.`)
	})
	r := f.call("PUT", "/v1/session/create", secret, map[string]any{})
	want(t, "create with session:write", r, 200, "")
	sid := decode[map[string]string](t, r)["ID"]

	f.unchanged("anonymous KV write", func() {
		want(t, "anonymous put", f.call("PUT", "/v1/kv/app/x", "", "v"), 403,
			`Permission denied: anonymous token lacks permission 'key:write' on "app/x". The anonymous token is used implicitly when a request does not specify a token.`)
	})
	f.unchanged("write outside the prefix", func() {
		want(t, "put b/x", f.call("PUT", "/v1/kv/b/x", secret, "v"), 403,
			fmt.Sprintf(`Permission denied: token with AccessorID '%s' lacks permission 'key:write' on "b/x"`, accessor))
	})
	f.unchanged("acquire of a denied key", func() {
		want(t, "acquire app/secret", f.call("PUT", "/v1/kv/app/secret?acquire="+sid, secret, "v"), 403, "")
	})
	want(t, "acquire app/lock", f.call("PUT", "/v1/kv/app/lock?acquire="+sid, secret, "v"), 200, "true")
	want(t, "put app/x", f.call("PUT", "/v1/kv/app/x", secret, "v"), 200, "true")
	// key:read is needed whether or not the key exists.
	want(t, "read missing b/y", f.call("GET", "/v1/kv/b/y", secret, nil), 403, "")
	want(t, "read missing app/y", f.call("GET", "/v1/kv/app/y", secret, nil), 404, "")
	// A listing keeps what the caller reads and says it dropped the rest,
	// but not to the anonymous token.
	if _, err := f.b.Store().Apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "app/secret", Value: []byte("s")}}); err != nil {
		t.Fatal(err)
	}
	r = f.call("GET", "/v1/kv/app/?recurse", secret, nil)
	want(t, "recurse", r, 200, "")
	if keys := decode[[]map[string]any](t, r); len(keys) != 2 || r.header.Get("X-Consul-Results-Filtered-By-ACLs") != "true" {
		t.Fatalf("recurse under app/: %s, filtered header %q", r.text(), r.header.Get("X-Consul-Results-Filtered-By-ACLs"))
	}
	r = f.call("GET", "/v1/kv/app/?keys", secret, nil)
	if keys := decode[[]string](t, r); strings.Join(keys, ",") != "app/lock,app/x" {
		t.Fatalf("keys: %v", keys)
	}
	r = f.call("GET", "/v1/kv/?recurse", "", nil)
	if r.code != 404 || r.header.Get("X-Consul-Results-Filtered-By-ACLs") != "" {
		t.Fatalf("anonymous recurse: %d, filtered header %q", r.code, r.header.Get("X-Consul-Results-Filtered-By-ACLs"))
	}
	// A recursive delete needs write on everything under the prefix.
	f.unchanged("recursive delete over a denied key", func() {
		want(t, "delete app/?recurse", f.call("DELETE", "/v1/kv/app/?recurse", secret, nil), 403, "")
	})
	want(t, "delete app/x", f.call("DELETE", "/v1/kv/app/x", secret, nil), 200, "true")
	// Session reads are filtered by session:read on the node.
	r = f.call("GET", "/v1/session/list", "", nil)
	if r.code != 200 || r.text() != "[]" {
		t.Fatalf("anonymous session list: %d %s", r.code, r.text())
	}
	f.unchanged("anonymous destroy", func() {
		want(t, "anonymous destroy", f.call("PUT", "/v1/session/destroy/"+sid, "", nil), 403, "")
	})
	want(t, "renew", f.call("PUT", "/v1/session/renew/"+sid, secret, nil), 200, "")
	want(t, "destroy", f.call("PUT", "/v1/session/destroy/"+sid, secret, nil), 200, "true")
}

// TestACLTokenSources: ?token beats X-Consul-Token beats Authorization:
// Bearer beats the agent's default token, and an unknown secret or a root
// name is refused (S86).
func TestACLTokenSources(t *testing.T) {
	f := newACLFixture(t, "deny")
	f.policy("read-a", `key_prefix "a" { policy = "read" }`)
	reader, _ := f.token("read-a")
	get := func(path string, hdr map[string]string) int {
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return f.send(req).code
	}
	cases := []struct {
		what string
		path string
		hdr  map[string]string
		code int
	}{
		{"query token", "/v1/kv/a?token=" + reader, nil, 404},
		{"query token over header", "/v1/kv/a?token=" + reader, map[string]string{"X-Consul-Token": "anonymous"}, 404},
		{"empty query token falls to the header", "/v1/kv/a?token=", map[string]string{"X-Consul-Token": reader}, 404},
		{"header", "/v1/kv/a", map[string]string{"X-Consul-Token": reader}, 404},
		{"header over bearer", "/v1/kv/a", map[string]string{"X-Consul-Token": "anonymous", "Authorization": "Bearer " + reader}, 403},
		{"bearer, any case, first word", "/v1/kv/a", map[string]string{"Authorization": "bEaReR " + reader + " extra"}, 404},
		{"basic is no token", "/v1/kv/a", map[string]string{"Authorization": "Basic " + reader}, 403},
		{"unknown secret", "/v1/kv/a", map[string]string{"X-Consul-Token": "99999999-2222-3333-4444-555555555555"}, 403},
		{"root name", "/v1/kv/a", map[string]string{"X-Consul-Token": "manage"}, 500},
	}
	for _, c := range cases {
		if got := get(c.path, c.hdr); got != c.code {
			t.Errorf("%s: %d, want %d", c.what, got, c.code)
		}
	}
	if r := f.call("GET", "/v1/kv/a", "99999999-2222-3333-4444-555555555555", nil); r.text() != "ACL not found" {
		t.Errorf("unknown secret text %q", r.text())
	}
	// The agent's default token stands in for a request that names none.
	if err := setDefaultToken(f, reader); err != nil {
		t.Fatal(err)
	}
	if got := get("/v1/kv/a", nil); got != 404 {
		t.Errorf("default token: %d", got)
	}
}

// setDefaultToken sets the fixture's default token as the agent token
// endpoint does (the fixture serves the server API only).
func setDefaultToken(f *aclFixture, secret string) error {
	h := httpapi.WithLocalAgent(nil, http.NotFoundHandler(), httpapi.LocalOptions{ACL: f.opts.ACL, Node: "node-a", Logger: f.opts.Logger})
	req := httptest.NewRequest("PUT", "/v1/agent/token/acl_token", strings.NewReader(`{"Token":"`+secret+`"}`))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 200 {
		return fmt.Errorf("agent token: %d %s", w.Code, w.Body.String())
	}
	return nil
}

// TestACLBootstrapOnceAndReset: the initial management token spent the
// bootstrap; another answers 403 with the reset index; writing it to the
// reset file allows exactly one more (S87).
func TestACLBootstrapOnceAndReset(t *testing.T) {
	f := newACLFixture(t, "deny")
	idx := f.b.Store().Snapshot().ACLBootstrapIndex()
	refusal := fmt.Sprintf("Permission denied: ACL bootstrap no longer allowed (reset index: %d)", idx)
	f.unchanged("second bootstrap", func() {
		want(t, "second bootstrap", f.call("PUT", "/v1/acl/bootstrap", "", nil), 403, refusal)
	})
	if err := os.WriteFile(f.reset, []byte(fmt.Sprint(idx+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	f.unchanged("wrong reset index", func() {
		want(t, "wrong reset", f.call("PUT", "/v1/acl/bootstrap", "", nil), 400,
			fmt.Sprintf("Invalid bootstrap reset index (specified %d, reset index: %d)", idx+1, idx))
	})
	if err := os.WriteFile(f.reset, []byte(fmt.Sprintf("%d\n", idx)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.call("PUT", "/v1/acl/bootstrap", "", nil)
	want(t, "bootstrap after reset", r, 200, "")
	boot := decode[map[string]any](t, r)
	if boot["ID"] != boot["SecretID"] || boot["Description"] != acl.BootstrapDescription {
		t.Fatalf("bootstrap answer %s", r.text())
	}
	if _, err := os.Stat(f.reset); !os.IsNotExist(err) {
		t.Fatalf("reset file kept: %v", err)
	}
	want(t, "new token manages", f.call("GET", "/v1/acl/tokens", boot["SecretID"].(string), nil), 200, "")
	if r := f.call("PUT", "/v1/acl/bootstrap", "", nil); r.code != 403 {
		t.Fatalf("third bootstrap: %d %s", r.code, r.text())
	}
}

// TestACLDisabledEndpoints: with ACLs off the ACL endpoints answer 401 and
// everything else is allowed.
func TestACLDisabledEndpoints(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/v1/acl/bootstrap", "/v1/acl/token", "/v1/acl/policy"} {
		want(t, p, f.do("PUT", p, []byte("{}")), 401, "ACL support disabled")
	}
	want(t, "tokens", f.do("GET", "/v1/acl/tokens", nil), 401, "ACL support disabled")
	want(t, "kv", f.do("PUT", "/v1/kv/x", []byte("v")), 200, "true")
}

// TestACLEndpointsNeedManagement: the ACL endpoints need acl:read and
// acl:write; a token reads itself without either; secrets are hidden from
// a reader without acl:write.
func TestACLEndpointsNeedManagement(t *testing.T) {
	f := newACLFixture(t, "allow") // allow never grants acl:*
	f.policy("acl-read", `acl = "read"`)
	reader, readerAcc := f.token("acl-read")
	for _, path := range []string{"/v1/acl/tokens", "/v1/acl/policies", "/v1/acl/roles"} {
		want(t, "anonymous "+path, f.call("GET", path, "", nil), 403, "")
		want(t, "reader "+path, f.call("GET", path, reader, nil), 200, "")
	}
	f.unchanged("reader writes a policy", func() {
		want(t, "reader write", f.call("PUT", "/v1/acl/policy", reader, map[string]any{"Name": "x"}), 403,
			fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'acl:write'", readerAcc))
	})
	r := f.call("GET", "/v1/acl/tokens", reader, nil)
	if strings.Contains(r.text(), mgmtSecret) || !strings.Contains(r.text(), `"SecretID":"\u003chidden\u003e"`) {
		t.Fatalf("reader sees secrets: %s", r.text())
	}
	self := decode[map[string]any](t, f.call("GET", "/v1/acl/token/self", reader, nil))
	if self["SecretID"] != reader {
		t.Fatalf("self: %v", self)
	}
	want(t, "self of nobody", f.call("GET", "/v1/acl/token/self", "", nil), 403, "token does not exist: ACL not found")
}

// TestACLWritesRefusedWithConsulsTexts: a refused ACL write answers 400 with
// Consul's reason and changes nothing (S88); rules that do not parse never
// become a policy.
func TestACLWritesRefusedWithConsulsTexts(t *testing.T) {
	f := newACLFixture(t, "deny")
	f.policy("kv-a", `key_prefix "a/" { policy = "write" }`)
	cases := []struct {
		what, method, path string
		body               any
		code               int
		text               string
	}{
		{"bad rules", "PUT", "/v1/acl/policy", map[string]any{"Name": "bad", "Rules": `key_prefix "a/" { policy = "wrte" }`}, 400,
			`Invalid key_prefix policy: &acl.KeyRule{Prefix:"a/", Policy:"wrte", EnterpriseRule:acl.EnterpriseRule{}}`},
		{"rules that do not parse", "PUT", "/v1/acl/policy", map[string]any{"Name": "bad", "Rules": `key "a" {`}, 400, ""},
		{"duplicate name", "PUT", "/v1/acl/policy", map[string]any{"Name": "KV-A"}, 400, `Invalid Policy: A Policy with Name "KV-A" already exists`},
		{"no name", "PUT", "/v1/acl/policy", map[string]any{}, 400, "Invalid Policy: no Name is set"},
		{"bad name", "PUT", "/v1/acl/policy", map[string]any{"Name": "bad name!"}, 400,
			"Invalid Policy: invalid Name. Only alphanumeric characters, a single '/', '-' and '_' are allowed"},
		{"ID on create", "PUT", "/v1/acl/policy", map[string]any{"Name": "x", "ID": "4c5ffb7c-b2df-dbff-1356-47b0af1b2ab6"}, 400,
			"Cannot specify the ID when creating a new policy"},
		{"builtin rules", "PUT", "/v1/acl/policy/" + model.GlobalManagementPolicyID, map[string]any{"Name": "global-management", "Rules": ""}, 400,
			"Changing the Rules for the builtin global-management policy is not permitted"},
		{"builtin delete", "DELETE", "/v1/acl/policy/" + model.GlobalManagementPolicyID, nil, 400,
			"Delete operation not permitted on the builtin global-management policy"},
		{"unknown field", "PUT", "/v1/acl/token", `{"Bogus":1}`, 400, `Token decoding failed: json: unknown field "Bogus"`},
		{"missing policy", "PUT", "/v1/acl/token", map[string]any{"Policies": []map[string]string{{"Name": "nope"}}}, 400,
			`No such ACL policy with name "nope"`},
		{"reserved accessor", "PUT", "/v1/acl/token", map[string]any{"AccessorID": "00000000-0000-0000-0000-000000000099"}, 400,
			`Invalid Token: AccessorID - UUIDs with the prefix "00000000-0000-0000-0000-0000000000" are reserved`},
		{"secret reused", "PUT", "/v1/acl/token", map[string]any{"SecretID": mgmtSecret}, 400, "Invalid Token: SecretID is already in use"},
		{"bad identity", "PUT", "/v1/acl/token", map[string]any{"ServiceIdentities": []map[string]string{{"ServiceName": "Bad Name"}}}, 400,
			`Service identity "Bad Name" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`},
		{"anonymous delete", "DELETE", "/v1/acl/token/" + model.AnonymousTokenID, nil, 400, "Delete operation not permitted on the anonymous token"},
		{"unknown delete", "DELETE", "/v1/acl/token/99999999-2222-3333-4444-555555555555", nil, 404, "Cannot find token to delete"},
		{"oversized rules", "PUT", "/v1/acl/policy", map[string]any{"Name": "big", "Rules": strings.Repeat(" ", model.MaxACLRulesLen+1)}, 413, ""},
	}
	for _, c := range cases {
		f.unchanged(c.what, func() {
			r := f.call(c.method, c.path, mgmtSecret, c.body)
			if r.code != c.code || (c.text != "" && r.text() != c.text) {
				t.Errorf("%s: %d %q, want %d %q", c.what, r.code, r.text(), c.code, c.text)
			}
		})
	}
	// Deleting the token the request is made with is refused.
	self := decode[map[string]any](t, f.call("GET", "/v1/acl/token/self", mgmtSecret, nil))
	f.unchanged("self delete", func() {
		want(t, "self delete", f.call("DELETE", "/v1/acl/token/"+self["AccessorID"].(string), mgmtSecret, nil), 400,
			"Deletion of the request's authorization token is not permitted")
	})
}

// TestACLTokenLifecycle: create, read, update (links by name and ID,
// repeats dropped), clone, list with filters, delete; shapes as consul/api
// reads them.
func TestACLTokenLifecycle(t *testing.T) {
	f := newACLFixture(t, "deny")
	pid := f.policy("one", `acl = "read"`)
	f.policy("two", `node_prefix "" { policy = "read" }`)
	r := f.call("PUT", "/v1/acl/role", mgmtSecret, map[string]any{"Name": "ops", "Policies": []map[string]string{{"Name": "two"}}})
	want(t, "role", r, 200, "")
	role := decode[map[string]any](t, r)
	r = f.call("PUT", "/v1/acl/token", mgmtSecret, map[string]any{"Description": "t",
		"Policies": []map[string]string{{"ID": pid}, {"Name": "one"}}, "Roles": []map[string]string{{"Name": "ops"}},
		"ServiceIdentities": []map[string]any{{"ServiceName": "web"}}})
	want(t, "create", r, 200, "")
	tok := decode[map[string]any](t, r)
	if n := len(tok["Policies"].([]any)); n != 1 {
		t.Fatalf("links not deduplicated: %s", r.text())
	}
	acc := tok["AccessorID"].(string)
	read := f.call("GET", "/v1/acl/token/"+acc, mgmtSecret, nil)
	if read.text() != r.text() {
		t.Fatalf("read back differs:\n%s\n%s", read.text(), r.text())
	}
	// An update may send the token as read, Hash and times included.
	upd := decode[map[string]any](t, read)
	upd["Description"] = "updated"
	r = f.call("PUT", "/v1/acl/token/"+acc, mgmtSecret, upd)
	want(t, "update", r, 200, "")
	if got := decode[map[string]any](t, r); got["Description"] != "updated" || got["CreateIndex"] != tok["CreateIndex"] || got["ModifyIndex"] == tok["ModifyIndex"] {
		t.Fatalf("update: %s", r.text())
	}
	want(t, "secret change", f.call("PUT", "/v1/acl/token/"+acc, mgmtSecret, map[string]any{"SecretID": "99999999-2222-3333-4444-555555555555"}), 400,
		"Changing a token's SecretID is not permitted")
	r = f.call("PUT", "/v1/acl/token/"+acc+"/clone", mgmtSecret, map[string]any{"Description": "cloned"})
	want(t, "clone", r, 200, "")
	clone := decode[map[string]any](t, r)
	if clone["AccessorID"] == acc || clone["Description"] != "cloned" || len(clone["Roles"].([]any)) != 1 {
		t.Fatalf("clone: %s", r.text())
	}
	for filter, n := range map[string]int{"policy=" + pid: 2, "role=" + role["ID"].(string): 2, "servicename=web": 2, "servicename=db": 0} {
		if got := decode[[]any](t, f.call("GET", "/v1/acl/tokens?"+filter, mgmtSecret, nil)); len(got) != n {
			t.Errorf("tokens?%s: %d, want %d", filter, len(got), n)
		}
	}
	want(t, "two filters", f.call("GET", "/v1/acl/tokens?policy=a&role=b", mgmtSecret, nil), 400,
		"can only filter by one of policy, role, serviceName, or methodName at a time")
	want(t, "delete", f.call("DELETE", "/v1/acl/token/"+acc, mgmtSecret, nil), 200, "true")
	want(t, "read deleted", f.call("GET", "/v1/acl/token/"+acc, mgmtSecret, nil), 403, "token does not exist: ACL not found")
	want(t, "policy by name", f.call("GET", "/v1/acl/policy/name/ONE", mgmtSecret, nil), 200, "")
	want(t, "missing policy", f.call("GET", "/v1/acl/policy/name/nope", mgmtSecret, nil), 404, "Requested policy does not exist: ACL not found")
	want(t, "role by name", f.call("GET", "/v1/acl/role/name/ops", mgmtSecret, nil), 200, "")
}

// TestACLAuthorizeEndpoint: /v1/internal/acl/authorize answers the
// caller's permissions as the other endpoints decide them.
func TestACLAuthorizeEndpoint(t *testing.T) {
	f := newACLFixture(t, "deny")
	f.policy("kv", `key_prefix "a/" { policy = "write" }`)
	secret, _ := f.token("kv")
	r := f.call("POST", "/v1/internal/acl/authorize", secret, `[{"Resource":"key","Segment":"a/x","Access":"write"},{"Resource":"key","Segment":"b","Access":"read"},{"Resource":"acl","Access":"read"}]`)
	want(t, "authorize", r, 200, `[{"Resource":"key","Segment":"a/x","Access":"write","Allow":true},{"Resource":"key","Segment":"b","Access":"read","Allow":false},{"Resource":"acl","Access":"read","Allow":false}]`)
	want(t, "bad level", f.call("POST", "/v1/internal/acl/authorize", secret, `[{"Resource":"node","Segment":"n","Access":"list"}]`), 400,
		"Invalid access level for node resource: list")
}

// TestACLForwardedRequestCarriesCallersToken: a follower forwards a request
// with the token it is decided with: the caller's, else the follower's
// default, else the anonymous secret, never the leader's default (S86).
func TestACLForwardedRequestCarriesCallersToken(t *testing.T) {
	leader := newACLFixture(t, "deny")
	leader.policy("kv", `key_prefix "" { policy = "write" }`)
	writer, _ := leader.token("kv")
	// The leader's own default token would allow: a forwarded request must
	// not pick it up.
	if err := setDefaultToken(leader, writer); err != nil {
		t.Fatal(err)
	}
	fb := leader.b.Follower("node-f")
	fb.SetLeader(false, leaderAddr, true)
	fwd := &tokenRecorder{to: rpc.Local{leaderAddr: httpapi.New(leader.b, leader.opts)}}
	ftokens, _ := httpapi.NewAgentTokens(nil, "")
	fopts := httpapi.Options{Forward: fwd, ACL: httpapi.ACLOptions{Resolver: leader.opts.ACL.Resolver, Tokens: ftokens}}
	follower := newFixture(t, withBackend(fb), withOptions(fopts))
	fa := &aclFixture{fixture: follower, opts: fopts}

	want(t, "caller's token", fa.call("PUT", "/v1/kv/x", writer, "v"), 200, "true")
	want(t, "no token: anonymous", fa.call("PUT", "/v1/kv/x", "", "v"), 403, "")
	if got := fwd.last(); got != acl.AnonymousSecret {
		t.Fatalf("forwarded token %q, want the anonymous secret", got)
	}
	if err := setDefaultToken(fa, writer); err != nil {
		t.Fatal(err)
	}
	want(t, "no token: follower's default", fa.call("PUT", "/v1/kv/x", "", "v"), 200, "true")
}

// TestACLForwardedRequestIsDecidedByItsFrame: a forwarded request is
// decided with the token its frame carries, whatever its headers or query
// say, so a client cannot present one token to its agent and another to
// the server (S86).
func TestACLForwardedRequestIsDecidedByItsFrame(t *testing.T) {
	leader := newACLFixture(t, "deny")
	leader.policy("kv", `key_prefix "" { policy = "write" }`)
	writer, _ := leader.token("kv")
	to := rpc.Local{leaderAddr: httpapi.New(leader.b, leader.opts)}
	send := func(frame string) int {
		resp, err := to.Forward(context.Background(), leaderAddr, &rpc.Request{
			Origin: rpc.Origin{Node: "n", Token: frame}, Method: "PUT", URI: "/v1/kv/x?token=" + writer,
			Header: http.Header{"X-Consul-Token": {writer}}, Body: []byte("v")})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	if got := send(acl.AnonymousSecret); got != http.StatusForbidden {
		t.Errorf("frame anonymous, headers the writer's: status %d, want 403", got)
	}
	if got := send(""); got != http.StatusForbidden {
		t.Errorf("frame without a token, headers the writer's: status %d, want 403", got)
	}
	if got := send(writer); got != http.StatusOK {
		t.Errorf("frame with the writer's token: status %d, want 200", got)
	}
}

type tokenRecorder struct {
	to     rpc.Local
	tokens []string
}

func (r *tokenRecorder) Forward(ctx context.Context, addr string, req *rpc.Request) (*rpc.Response, error) {
	r.tokens = append(r.tokens, req.Origin.Token)
	return r.to.Forward(ctx, addr, req)
}

func (r *tokenRecorder) last() string { return r.tokens[len(r.tokens)-1] }

// TestACLSecretsNeverLogged: the secrets of tokens created, used, denied
// and set on the agent appear in no log line.
func TestACLSecretsNeverLogged(t *testing.T) {
	f := newACLFixture(t, "deny")
	f.policy("p", `key "k" { policy = "read" }`)
	secret, _ := f.token("p")
	f.call("PUT", "/v1/kv/k", secret, "v")
	f.call("GET", "/v1/kv/k", secret, nil)
	f.call("GET", "/v1/kv/k", "99999999-2222-3333-4444-555555555555", nil)
	f.call("GET", "/v1/kv/k", "manage", nil)
	f.call("DELETE", "/v1/acl/token/not-a-uuid", secret, nil)
	if err := setDefaultToken(f, secret); err != nil {
		t.Fatal(err)
	}
	logs := f.logs.String()
	for _, s := range []string{secret, mgmtSecret, "99999999-2222-3333-4444-555555555555"} {
		if strings.Contains(logs, s) {
			t.Fatalf("a secret is in the logs:\n%s", logs)
		}
	}
}

// TestACLPolicyAndRoleRecordEndpoints: policies and roles answer their ID
// and name endpoints alike, each in its own words: a read, a missing or
// malformed ID, an unknown ID or name, and a delete then its repeat.
func TestACLPolicyAndRoleRecordEndpoints(t *testing.T) {
	f := newACLFixture(t, "deny")
	const unknown = "00000000-0000-4000-8000-00000000abcd"
	for _, kind := range []string{"policy", "role"} {
		body := `{"Name":"rec-` + kind + `"}`
		r := f.call("PUT", "/v1/acl/"+kind, mgmtSecret, body)
		want(t, "create "+kind, r, 200, "")
		id := decode[map[string]any](t, r)["ID"].(string)
		base := "/v1/acl/" + kind + "/"
		want(t, kind+" by ID", f.call("GET", base+id, mgmtSecret, nil), 200, "")
		want(t, kind+" by name", f.call("GET", base+"name/rec-"+kind, mgmtSecret, nil), 200, "")
		want(t, kind+" without ID", f.call("GET", base, mgmtSecret, nil), 400, "Missing "+kind+" ID")
		want(t, kind+" without name", f.call("GET", base+"name/", mgmtSecret, nil), 400, "Missing "+kind+" Name")
		want(t, kind+" bad ID", f.call("GET", base+"x", mgmtSecret, nil), 400, `Invalid `+kind+` ID "x": not a UUID`)
		want(t, kind+" unknown ID", f.call("GET", base+unknown, mgmtSecret, nil), 404, "Requested "+kind+" does not exist: ACL not found")
		want(t, kind+" unknown name", f.call("GET", base+"name/nope", mgmtSecret, nil), 404, "Requested "+kind+" does not exist: ACL not found")
		want(t, "delete "+kind, f.call("DELETE", base+id, mgmtSecret, nil), 200, "true")
		want(t, kind+" after delete", f.call("GET", base+id, mgmtSecret, nil), 404, "Requested "+kind+" does not exist: ACL not found")
	}
}
