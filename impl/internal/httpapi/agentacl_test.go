package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// agentACLFixture is a server agent under default deny as an agent serves
// its API: the operational endpoints and the local agent's in front of the
// server's handler, every decision over the server's tables. The pool
// lists node-a (the agent) and n2. The local agent runs web (aweb) and db
// (adb), each with a TTL check (awebc, adbc), and a node check anode.
type agentACLFixture struct {
	*aclFixture // calls go to the agent's front
	la          *local.Agent
	reloads     int
}

func newAgentACLFixture(t *testing.T) *agentACLFixture {
	t.Helper()
	return newAgentACLFixturePolicy(t, "deny")
}

// newAgentACLFixturePolicy is newAgentACLFixture under another default
// policy.
func newAgentACLFixturePolicy(t *testing.T, defaultPolicy string) *agentACLFixture {
	t.Helper()
	pool := &keyringMembers{staticMembers: staticMembers{servers: []string{"node-a", "n2"}}}
	f := newACLFixtureWith(t, defaultPolicy, func(o *httpapi.Options) { o.Members = pool })
	la := local.NewAgent(local.Config{Node: "node-a", Stagger: func(time.Duration) time.Duration { return 0 }}, local.NewMemCatalog())
	t.Cleanup(la.Close)
	a := &agentACLFixture{la: la}
	authorize := httpapi.LocalAuthorize(f.b, f.opts.ACL)
	front := httpapi.WithLocalAgent(la, f.srv.Config.Handler, httpapi.LocalOptions{Node: "node-a", ACL: f.opts.ACL,
		Authorize: authorize, Reload: func() error { a.reloads++; return nil }})
	front = httpapi.WithAgentOps(front, httpapi.OpsOptions{ACL: f.opts.ACL, Authorize: authorize, Node: "node-a"})
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	copied := *f.fixture
	copied.srv = srv
	a.aclFixture = &aclFixture{fixture: &copied, opts: f.opts, logs: f.logs, reset: f.reset}
	for _, reg := range []struct{ path, body string }{
		{"/v1/agent/service/register", `{"Name":"web","ID":"aweb","Check":{"TTL":"1h","CheckID":"awebc"}}`},
		{"/v1/agent/service/register", `{"Name":"db","ID":"adb","Check":{"TTL":"1h","CheckID":"adbc"}}`},
		{"/v1/agent/check/register", `{"Name":"anode","TTL":"1h"}`},
	} {
		want(t, reg.path, a.call("PUT", reg.path, mgmtSecret, reg.body), 200, "")
	}
	return a
}

// localState is what a refused agent-local call must leave alone.
func (a *agentACLFixture) localState() string {
	st := a.la.State()
	return fmt.Sprintf("%+v %+v", st.Services(), st.Checks())
}

// TestACLAgentEndpointsEnforced: S90 on the agent's endpoints, each denial
// with Consul's status and text (measured, CONSUL.md §23) and changing
// nothing, and what the same token may do.
func TestACLAgentEndpointsEnforced(t *testing.T) {
	a := newAgentACLFixture(t)
	a.policy("web", `service "web" { policy = "write" }`)
	webW, acc := a.token("web")
	denied := func(perm, name string) string {
		out := fmt.Sprintf(`Permission denied: token with AccessorID '%s' lacks permission '%s'`, acc, perm)
		if name != "" {
			out += ` on "` + name + `"`
		}
		return out
	}
	anon := func(perm, name string) string {
		out := "Permission denied: anonymous token lacks permission '" + perm + "'"
		if name != "" {
			out += ` on "` + name + `"`
		}
		return out + ". The anonymous token is used implicitly when a request does not specify a token."
	}
	for _, tc := range []struct {
		what, method, path, token, body string
		code                            int
		text                            string
	}{
		{"self", "GET", "/v1/agent/self", "", "", 403, anon("agent:read", "node-a")},
		{"host", "GET", "/v1/agent/host", "", "", 403, anon("operator:read", "")},
		{"metrics", "GET", "/v1/agent/metrics", "", "", 403, anon("agent:read", "node-a")},
		{"monitor", "GET", "/v1/agent/monitor", "", "", 403, anon("agent:read", "node-a")},
		{"profiles", "GET", "/debug/pprof/heap", webW, "", 403, ""},
		{"reload", "PUT", "/v1/agent/reload", "", "", 403, anon("agent:write", "node-a")},
		{"join", "PUT", "/v1/agent/join/127.0.0.1:1", "", "", 403, anon("agent:write", "node-a")},
		{"leave", "PUT", "/v1/agent/leave", webW, "", 403, denied("agent:write", "node-a")},
		{"force-leave", "PUT", "/v1/agent/force-leave/zz", "", "", 403, anon("operator:write", "")},
		{"maintenance without enable", "PUT", "/v1/agent/maintenance", "", "", 400, "Missing value for enable"},
		{"maintenance", "PUT", "/v1/agent/maintenance?enable=true", webW, "", 403, denied("node:write", "node-a")},
		{"keyring list", "GET", "/v1/operator/keyring", "", "", 403, anon("keyring:read", "")},
		{"keyring without body", "PUT", "/v1/operator/keyring", "", "", 400, "Request decode failed: EOF"},
		{"keyring use", "PUT", "/v1/operator/keyring", webW, `{"Key":"k"}`, 403, denied("keyring:write", "")},
		{"autopilot", "GET", "/v1/operator/autopilot/configuration", "", "", 403, anon("operator:read", "")},
		{"service get db", "GET", "/v1/agent/service/adb", webW, "", 403, denied("service:read", "db")},
		{"service get unknown", "GET", "/v1/agent/service/zz", webW, "", 404, "unknown service ID: zz"},
		{"pass a db check", "PUT", "/v1/agent/check/pass/adbc", webW, "", 403, denied("service:write", "db")},
		{"pass a node check", "PUT", "/v1/agent/check/pass/anode", webW, "", 403, denied("node:write", "node-a")},
		{"pass unknown", "PUT", "/v1/agent/check/pass/zz", webW, "", 404, `Unknown check ID "zz". Ensure that the check ID is passed, not the check name.`},
		{"update with a bad status", "PUT", "/v1/agent/check/update/adbc", webW, `{"Status":"bogus"}`, 400, "Invalid check status: 'bogus'"},
		{"update a db check", "PUT", "/v1/agent/check/update/adbc", webW, `{"Status":"passing"}`, 403, denied("service:write", "db")},
		{"deregister a db check", "PUT", "/v1/agent/check/deregister/adbc", webW, "", 403, denied("service:write", "db")},
		{"register db", "PUT", "/v1/agent/service/register", webW, `{"Name":"db","ID":"adb2"}`, 403, denied("service:write", "db")},
		{"register web over adb", "PUT", "/v1/agent/service/register", webW, `{"Name":"web","ID":"adb"}`, 403, denied("service:write", "db")},
		{"register a node check", "PUT", "/v1/agent/check/register", webW, `{"Name":"x","TTL":"1h"}`, 403, denied("node:write", "node-a")},
		{"register an invalid check", "PUT", "/v1/agent/check/register", webW, `{"Name":"x"}`, 400, "Invalid check: TTL must be > 0 for TTL checks"},
		{"register a check on an unknown service", "PUT", "/v1/agent/check/register", webW, `{"Name":"x","TTL":"1h","ServiceID":"zz"}`, 404, `ServiceID "zz" does not exist`},
		{"register a check on adb", "PUT", "/v1/agent/check/register", webW, `{"Name":"x","TTL":"1h","ServiceID":"adb"}`, 403, denied("service:write", "db")},
		{"replace a node check", "PUT", "/v1/agent/check/register", webW, `{"Name":"anode","TTL":"1h","ServiceID":"aweb"}`, 403, denied("node:write", "node-a")},
		{"deregister adb", "PUT", "/v1/agent/service/deregister/adb", webW, "", 403, denied("service:write", "db")},
		{"maintenance of adb", "PUT", "/v1/agent/service/maintenance/adb?enable=true", webW, "", 403, denied("service:write", "db")},
		{"health of adb", "GET", "/v1/agent/health/service/id/adb", webW, "", 403, denied("service:read", "db")},
		{"health of db", "GET", "/v1/agent/health/service/name/db", webW, "", 403, denied("service:read", "db")},
		{"health of an unknown name", "GET", "/v1/agent/health/service/name/zz", webW, "", 403, denied("service:read", "zz")},
	} {
		before := a.localState()
		a.unchanged(tc.what, func() {
			want(t, tc.what, a.call(tc.method, tc.path, tc.token, tc.body), tc.code, tc.text)
		})
		if a.localState() != before {
			t.Fatalf("%s changed the local agent", tc.what)
		}
	}
	if a.reloads != 0 {
		t.Fatalf("a denied reload ran %d times", a.reloads)
	}
	for _, tc := range []struct{ what, method, path, body string }{
		{"pass a web check", "PUT", "/v1/agent/check/pass/awebc", ""},
		{"register a check on aweb", "PUT", "/v1/agent/check/register", `{"Name":"x2","TTL":"1h","ServiceID":"aweb"}`},
		{"re-register web", "PUT", "/v1/agent/service/register", `{"Name":"web","ID":"aweb"}`},
		{"service get web", "GET", "/v1/agent/service/aweb", ""},
		{"status leader is open", "GET", "/v1/status/leader", ""},
	} {
		if r := a.call(tc.method, tc.path, webW, tc.body); r.code != 200 {
			t.Errorf("%s: %d %s", tc.what, r.code, r.text())
		}
	}
	if r := a.call("GET", "/v1/agent/self", mgmtSecret, nil); r.code != 200 {
		t.Errorf("self with management: %d %s", r.code, r.text())
	}
	if r := a.call("PUT", "/v1/agent/reload", mgmtSecret, nil); r.code != 200 || a.reloads != 1 {
		t.Errorf("reload with management: %d %s, %d reloads", r.code, r.text(), a.reloads)
	}
}

// TestACLAgentRegistrationKeepsToken: a local registration keeps the token
// its request was decided with (?token, X-Consul-Token, Bearer, else the
// agent's default token as it is then), never the body's Token field, and
// the service's checks and a maintenance check keep theirs likewise
// (CONSUL.md §24).
func TestACLAgentRegistrationKeepsToken(t *testing.T) {
	a := newAgentACLFixture(t)
	a.policy("web", `service "web" { policy = "write" }
node "node-a" { policy = "write" }`)
	webW, _ := a.token("web")
	st := a.la.State()
	if got := st.ServiceToken("aweb"); got != mgmtSecret {
		t.Fatalf("aweb keeps %q, want the management token it was registered with", got)
	}
	if got := st.CheckToken("awebc"); got != mgmtSecret {
		t.Fatalf("aweb's check keeps %q", got)
	}
	for _, tc := range []struct {
		what, id string
		send     func(body string) reply
	}{
		{"header", "h", func(body string) reply {
			return a.call("PUT", "/v1/agent/service/register", webW, body)
		}},
		{"query", "q", func(body string) reply {
			return a.call("PUT", "/v1/agent/service/register?token="+webW, "", body)
		}},
		{"bearer", "b", func(body string) reply {
			req, err := http.NewRequest("PUT", a.srv.URL+"/v1/agent/service/register", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+webW)
			return a.send(req)
		}},
	} {
		// The body names the management token: it must not be the one kept.
		body := `{"Name":"web","ID":"web-` + tc.id + `","Token":"` + mgmtSecret + `","Check":{"TTL":"1h"}}`
		if r := tc.send(body); r.code != 200 {
			t.Fatalf("%s: %d %s", tc.what, r.code, r.text())
		}
		if got := st.ServiceToken("web-" + tc.id); got != webW {
			t.Errorf("%s: the service keeps %q, want the request's %q", tc.what, got, webW)
		}
		if got := st.CheckToken("service:web-" + tc.id); got != webW {
			t.Errorf("%s: the service's check keeps %q", tc.what, got)
		}
	}
	if r := a.call("PUT", "/v1/agent/check/register", webW, `{"Name":"disk","TTL":"1h","Token":"`+mgmtSecret+`"}`); r.code != 200 {
		t.Fatalf("check register: %d %s", r.code, r.text())
	}
	if r := a.call("PUT", "/v1/agent/service/maintenance/aweb?enable=true", webW, nil); r.code != 200 {
		t.Fatalf("service maintenance: %d %s", r.code, r.text())
	}
	if r := a.call("PUT", "/v1/agent/maintenance?enable=true", webW, nil); r.code != 200 {
		t.Fatalf("node maintenance: %d %s", r.code, r.text())
	}
	for _, id := range []string{"disk", local.ServiceMaintenancePrefix + "aweb", local.NodeMaintenanceCheckID} {
		if got := st.CheckToken(id); got != webW {
			t.Errorf("check %s keeps %q, want the request's", id, got)
		}
	}
	// No token named: the default token of the moment is kept.
	if r := a.call("PUT", "/v1/agent/token/default", mgmtSecret, `{"Token":"`+webW+`"}`); r.code != 200 {
		t.Fatalf("set the default token: %d %s", r.code, r.text())
	}
	if r := a.call("PUT", "/v1/agent/service/register", "", `{"Name":"web","ID":"web-d"}`); r.code != 200 {
		t.Fatalf("register with the default token: %d %s", r.code, r.text())
	}
	if got := st.ServiceToken("web-d"); got != webW {
		t.Errorf("a registration naming no token keeps %q, want the default %q", got, webW)
	}
	// No registration's token shows in the agent's lists.
	for _, path := range []string{"/v1/agent/services", "/v1/agent/checks", "/v1/agent/service/web-h"} {
		r := a.call("GET", path, mgmtSecret, nil)
		if r.code != 200 || strings.Contains(r.text(), webW) || strings.Contains(r.text(), mgmtSecret) {
			t.Errorf("GET %s: %d %s", path, r.code, r.text())
		}
	}
}

// agentListIDs is the sorted keys of an agent list, or the names of a
// members list.
func agentListIDs(path string, r reply) string {
	var out []string
	if strings.HasSuffix(path, "/members") {
		for _, m := range decodeAny[[]struct{ Name string }](r) {
			out = append(out, m.Name)
		}
	} else {
		for k := range decodeAny[map[string]any](r) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func decodeAny[T any](r reply) T {
	var v T
	_ = json.Unmarshal(r.body, &v)
	return v
}

// checkAgentList is the checker of a filtered agent list.
func checkAgentList(path string, r reply, wantIDs string, wantHeader bool) error {
	if r.code != 200 {
		return fmt.Errorf("%s: %d %s", path, r.code, r.text())
	}
	if got := agentListIDs(path, r); got != wantIDs {
		return fmt.Errorf("%s: shows %q, want %q", path, got, wantIDs)
	}
	if h := r.header.Get("X-Consul-Results-Filtered-By-ACLs") == "true"; h != wantHeader {
		return fmt.Errorf("%s: filtered header %v, want %v", path, h, wantHeader)
	}
	return nil
}

// TestACLAgentListsFiltered: the agent's lists keep what the token reads
// and, as Consul's agent does, tell any request with a token, the
// anonymous one named outright too, but not one without.
func TestACLAgentListsFiltered(t *testing.T) {
	a := newAgentACLFixture(t)
	a.policy("webread", `service "web" { policy = "read" }
node "node-a" { policy = "read" }`)
	reader, _ := a.token("webread")
	lists := []struct{ path, reader, all string }{
		{"/v1/agent/services", "aweb", "adb,aweb"},
		{"/v1/agent/checks", "anode,awebc", "adbc,anode,awebc"},
		{"/v1/agent/members", "node-a", "n2,node-a"},
	}
	for _, l := range lists {
		if err := checkAgentList(l.path, a.call("GET", l.path, reader, nil), l.reader, true); err != nil {
			t.Error(err)
		}
		if err := checkAgentList(l.path, a.call("GET", l.path, mgmtSecret, nil), l.all, false); err != nil {
			t.Error("management:", err)
		}
		if err := checkAgentList(l.path, a.call("GET", l.path, "", nil), "", false); err != nil {
			t.Error("no token:", err)
		}
		if err := checkAgentList(l.path, a.call("GET", l.path, "anonymous", nil), "", true); err != nil {
			t.Error("anonymous named:", err)
		}
		// The checker itself fails an answer that kept everything.
		if checkAgentList(l.path, a.call("GET", l.path, mgmtSecret, nil), l.reader, true) == nil {
			t.Errorf("%s: the checker passed an unfiltered answer", l.path)
		}
	}
}

// TestACLClientAgentAsksAServer: a client agent decides its own endpoints
// (self, members, join) by asking a server, with the caller's token; the
// server's tables decide (S90).
func TestACLClientAgentAsksAServer(t *testing.T) {
	leader := newACLFixture(t, "deny")
	members := &staticMembers{}
	members.set(leaderAddr)
	tokens, err := httpapi.NewAgentTokens(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	client := httptest.NewServer(httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: members,
		Forward: rpc.Local{leaderAddr: httpapi.New(leader.b, leader.opts)},
		ACL:     httpapi.ACLOptions{Resolver: leader.opts.ACL.Resolver, Tokens: tokens}}))
	t.Cleanup(client.Close)
	copied := *leader.fixture
	copied.srv = client
	c := &aclFixture{fixture: &copied, opts: leader.opts}

	want(t, "anonymous self", c.call("GET", "/v1/agent/self", "", nil), 403,
		`Permission denied: anonymous token lacks permission 'agent:read' on "c1". The anonymous token is used implicitly when a request does not specify a token.`)
	leader.policy("agent", `agent "c1" { policy = "read" }`)
	reader, acc := leader.token("agent")
	want(t, "self with agent:read", c.call("GET", "/v1/agent/self", reader, nil), 200, "")
	want(t, "join with agent:read only", c.call("PUT", "/v1/agent/join/127.0.0.1:1", reader, nil), 403,
		fmt.Sprintf(`Permission denied: token with AccessorID '%s' lacks permission 'agent:write' on "c1"`, acc))
	r := c.call("GET", "/v1/agent/members", reader, nil)
	if err := checkAgentList("/v1/agent/members", r, "", true); err != nil {
		t.Error(err)
	}
	leader.policy("nodes", `node_prefix "" { policy = "read" }`)
	all, _ := leader.token("nodes")
	if err := checkAgentList("/v1/agent/members", c.call("GET", "/v1/agent/members", all, nil), leaderAddr, false); err != nil {
		t.Error(err)
	}
}
