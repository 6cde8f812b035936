package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// sweepRequest is one request of the anonymous sweep: pattern is the route
// it exercises ("METHOD pattern", as httpapi.EveryRoute lists it), write
// says whether it must be refused with status (a read may instead answer
// 2xx, but then with nothing the token may not read).
type sweepRequest struct {
	pattern string
	path    string
	body    string
	write   bool
	status  int
	// shows, if set, judges a read's 2xx answer instead of the sentinel
	// search: for answers that carry the caller's own words or a name
	// Consul shows to anyone.
	shows func(body []byte) error
}

// sweepSentinels are strings that only the records the sweep's fixture
// made carry; an anonymous answer that holds one has shown a record.
var sweepSentinels = []string{"sweep", "aweb", "adb", "anode"}

// TestACLAnonymousCanNeitherReadNorChange: with default deny, a request with
// no token reaches nothing on any endpoint a server agent answers: every
// write is refused and changes neither the replicated state (its hash and
// applied count) nor the local agent's services and checks, and every read
// is refused or answers without any record (S85, S90). The sweep covers
// every route of the agent's tables (httpapi.EveryRoute), so a new endpoint
// must be added here.
func TestACLAnonymousCanNeitherReadNorChange(t *testing.T) {
	for _, p := range anonymousSweep(t, newAgentACLFixture(t)) {
		t.Error(p)
	}
}

// TestAnonymousSweepCatchesAnOpenAgent: the sweep finds both kinds of
// breach, writes applied and records shown, on an agent whose default
// policy lets anonymous in, and names the routes.
func TestAnonymousSweepCatchesAnOpenAgent(t *testing.T) {
	problems := strings.Join(anonymousSweep(t, newAgentACLFixturePolicy(t, "allow")), "\n")
	for _, want := range []string{
		"PUT /v1/kv/sweep/k: changed the replicated state",
		"GET /v1/kv/sweep/k: the anonymous answer shows",
		"PUT /v1/agent/service/register: the local agent changed",
		"GET /v1/agent/services: the anonymous answer shows",
		"PUT /v1/catalog/register: changed the replicated state",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("the sweep missed %q; it found:\n%s", want, problems)
		}
	}
}

// anonymousSweep populates a with records, sends every request of the
// sweep with no token and returns what went wrong.
func anonymousSweep(t *testing.T, a *agentACLFixture) (problems []string) {
	t.Helper()
	mgmt := func(method, path, body string) reply {
		t.Helper()
		var b any
		if body != "" {
			b = body
		}
		r := a.call(method, path, mgmtSecret, b)
		if r.code != http.StatusOK {
			t.Fatalf("fixture %s %s: %d %s", method, path, r.code, r.text())
		}
		return r
	}
	id := func(r reply, field string) string {
		var out map[string]any
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatalf("decode %s: %v", r.text(), err)
		}
		return fmt.Sprint(out[field])
	}
	mgmt("PUT", "/v1/catalog/register", `{"Node":"sweepnode","Address":"10.0.0.9",
		"Service":{"ID":"sweepsvc1","Service":"sweepsvc","Port":80},
		"Check":{"CheckID":"sweepchk","Name":"sweepchk","Status":"passing","ServiceID":"sweepsvc1"}}`)
	mgmt("PUT", "/v1/kv/sweep/k", "sweepval")
	session := id(mgmt("PUT", "/v1/session/create", `{"Name":"sweepsess","Node":"sweepnode","Checks":[]}`), "ID")
	query := id(mgmt("POST", "/v1/query", `{"Name":"sweepq","Service":{"Service":"sweepsvc"}}`), "ID")
	mgmt("PUT", "/v1/coordinate/update", `{"Node":"sweepnode","Coord":{"Vec":[0,0,0,0,0,0,0,0],"Error":1.5}}`)
	policy := id(mgmt("PUT", "/v1/acl/policy", `{"Name":"sweeppol","Rules":"key \"sweep/\" { policy = \"read\" }"}`), "ID")
	role := id(mgmt("PUT", "/v1/acl/role", `{"Name":"sweeprole","Policies":[{"Name":"sweeppol"}]}`), "ID")
	accessor := id(mgmt("PUT", "/v1/acl/token", `{"Description":"sweeptok","Policies":[{"Name":"sweeppol"}]}`), "AccessorID")
	coord := `{"Node":"sweepnode","Coord":{"Vec":[1,0,0,0,0,0,0,0],"Error":1.5}}`
	key := `{"Key":"pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="}`

	read := func(pattern, path string) sweepRequest {
		return sweepRequest{pattern: pattern, path: path}
	}
	write := func(pattern, path, body string) sweepRequest {
		return sweepRequest{pattern: pattern, path: path, body: body, write: true, status: http.StatusForbidden}
	}
	sweep := []sweepRequest{
		write("PUT /v1/session/create", "/v1/session/create", `{"Node":"sweepnode","Checks":[]}`),
		write("PUT /v1/session/destroy/", "/v1/session/destroy/"+session, ""),
		write("PUT /v1/session/renew/", "/v1/session/renew/"+session, ""),
		read("GET /v1/session/info/", "/v1/session/info/"+session),
		read("GET /v1/session/node/", "/v1/session/node/sweepnode"),
		read("GET /v1/session/list", "/v1/session/list"),
		read("GET /v1/kv/", "/v1/kv/sweep/k"),
		read("GET /v1/kv/", "/v1/kv/?recurse"),
		read("GET /v1/kv/", "/v1/kv/?keys"),
		write("PUT /v1/kv/", "/v1/kv/sweep/k", "x"),
		write("PUT /v1/kv/", "/v1/kv/sweep/k?acquire="+session, "x"),
		write("DELETE /v1/kv/", "/v1/kv/sweep/k", ""),
		write("DELETE /v1/kv/", "/v1/kv/?recurse", ""),
		// A denied txn op refuses the txn with Consul's 409 (S90).
		{pattern: "PUT /v1/txn", path: "/v1/txn", body: `[{"KV":{"Verb":"set","Key":"sweep/k","Value":"eA=="}}]`,
			write: true, status: http.StatusConflict},
		// A read-only txn answers what the token may read: nothing.
		{pattern: "PUT /v1/txn", path: "/v1/txn", body: `[{"KV":{"Verb":"get","Key":"sweep/k"}}]`},
		write("PUT /v1/catalog/register", "/v1/catalog/register", `{"Node":"sweepnode","Address":"10.0.0.10"}`),
		write("PUT /v1/catalog/deregister", "/v1/catalog/deregister", `{"Node":"sweepnode"}`),
		read("GET /v1/catalog/nodes", "/v1/catalog/nodes"),
		read("GET /v1/catalog/node/", "/v1/catalog/node/sweepnode"),
		read("GET /v1/catalog/services", "/v1/catalog/services"),
		read("GET /v1/catalog/service/", "/v1/catalog/service/sweepsvc"),
		read("GET /v1/catalog/node-services/", "/v1/catalog/node-services/sweepnode"),
		read("GET /v1/catalog/datacenters", "/v1/catalog/datacenters"),
		read("GET /v1/health/node/", "/v1/health/node/sweepnode"),
		read("GET /v1/health/service/", "/v1/health/service/sweepsvc"),
		read("GET /v1/health/checks/", "/v1/health/checks/sweepsvc"),
		read("GET /v1/health/state/", "/v1/health/state/any"),
		read("GET /v1/query", "/v1/query"),
		write("POST /v1/query", "/v1/query", `{"Name":"sweepq2","Service":{"Service":"sweepsvc"}}`),
		read("GET /v1/query/", "/v1/query/"+query),
		// Anyone may execute a query by ID or name, as in Consul; the
		// answer names its service but lists only nodes the query's token
		// may read (here none, the query having no token of its own).
		{pattern: "GET /v1/query/", path: "/v1/query/" + query + "/execute", shows: noNodes},
		{pattern: "GET /v1/query/", path: "/v1/query/sweepq/execute", shows: noNodes},
		read("GET /v1/query/", "/v1/query/"+query+"/explain"),
		write("PUT /v1/query/", "/v1/query/"+query, `{"Name":"sweepq","Service":{"Service":"other"}}`),
		write("DELETE /v1/query/", "/v1/query/"+query, ""),
		read("GET /v1/agent/self", "/v1/agent/self"),
		read("GET /v1/agent/members", "/v1/agent/members"),
		read("GET /v1/agent/metrics", "/v1/agent/metrics"),
		read("GET /v1/agent/host", "/v1/agent/host"),
		read("GET /v1/agent/monitor", "/v1/agent/monitor"),
		read("GET /debug/pprof/", "/debug/pprof/"),
		read("GET /v1/operator/autopilot/configuration", "/v1/operator/autopilot/configuration"),
		read("GET /v1/operator/raft/configuration", "/v1/operator/raft/configuration"),
		write("DELETE /v1/operator/raft/peer", "/v1/operator/raft/peer?address=127.0.0.1:8300", ""),
		read("GET /v1/operator/keyring", "/v1/operator/keyring"),
		write("POST /v1/operator/keyring", "/v1/operator/keyring", key),
		write("PUT /v1/operator/keyring", "/v1/operator/keyring", key),
		write("DELETE /v1/operator/keyring", "/v1/operator/keyring", key),
		write("PUT /v1/agent/join/", "/v1/agent/join/127.0.0.1", ""),
		write("PUT /v1/agent/leave", "/v1/agent/leave", ""),
		write("PUT /v1/agent/force-leave/", "/v1/agent/force-leave/n2", ""),
		write("PUT /v1/agent/check/pass/", "/v1/agent/check/pass/anode", ""),
		write("PUT /v1/agent/check/warn/", "/v1/agent/check/warn/anode", ""),
		write("PUT /v1/agent/check/fail/", "/v1/agent/check/fail/anode", ""),
		read("GET /v1/status/leader", "/v1/status/leader"),
		read("GET /v1/status/peers", "/v1/status/peers"),
		// Bootstrap is open to anyone, and refused once done.
		write("PUT /v1/acl/bootstrap", "/v1/acl/bootstrap", ""),
		read("GET /v1/acl/replication", "/v1/acl/replication"),
		write("PUT /v1/acl/token", "/v1/acl/token", `{"Description":"sweep2","Policies":[{"Name":"sweeppol"}]}`),
		read("GET /v1/acl/token/self", "/v1/acl/token/self"),
		read("GET /v1/acl/token/", "/v1/acl/token/"+accessor),
		write("PUT /v1/acl/token/", "/v1/acl/token/"+accessor, `{"Description":"changed"}`),
		write("DELETE /v1/acl/token/", "/v1/acl/token/"+accessor, ""),
		read("GET /v1/acl/tokens", "/v1/acl/tokens"),
		write("PUT /v1/acl/policy", "/v1/acl/policy", `{"Name":"sweeppol2","Rules":""}`),
		read("GET /v1/acl/policy/name/", "/v1/acl/policy/name/sweeppol"),
		read("GET /v1/acl/policy/", "/v1/acl/policy/"+policy),
		write("PUT /v1/acl/policy/", "/v1/acl/policy/"+policy, `{"Name":"sweeppol","Rules":""}`),
		write("DELETE /v1/acl/policy/", "/v1/acl/policy/"+policy, ""),
		read("GET /v1/acl/policies", "/v1/acl/policies"),
		write("PUT /v1/acl/role", "/v1/acl/role", `{"Name":"sweeprole2"}`),
		read("GET /v1/acl/role/name/", "/v1/acl/role/name/sweeprole"),
		read("GET /v1/acl/role/", "/v1/acl/role/"+role),
		write("PUT /v1/acl/role/", "/v1/acl/role/"+role, `{"Name":"sweeprole"}`),
		write("DELETE /v1/acl/role/", "/v1/acl/role/"+role, ""),
		read("GET /v1/acl/roles", "/v1/acl/roles"),
		// Any token may ask what it may do; the answer is about itself.
		{pattern: "POST /v1/internal/acl/authorize", path: "/v1/internal/acl/authorize", shows: nothingAllowed},
		read("GET /v1/coordinate/datacenters", "/v1/coordinate/datacenters"),
		read("GET /v1/coordinate/nodes", "/v1/coordinate/nodes"),
		read("GET /v1/coordinate/node/", "/v1/coordinate/node/sweepnode"),
		write("PUT /v1/coordinate/update", "/v1/coordinate/update", coord),
		write("PUT /v1/agent/check/register", "/v1/agent/check/register", `{"Name":"x","TTL":"1h"}`),
		write("PUT /v1/agent/check/deregister/", "/v1/agent/check/deregister/anode", ""),
		write("PUT /v1/agent/check/update/", "/v1/agent/check/update/anode", `{"Status":"passing"}`),
		read("GET /v1/agent/checks", "/v1/agent/checks"),
		write("PUT /v1/agent/service/register", "/v1/agent/service/register", `{"Name":"x"}`),
		write("PUT /v1/agent/service/deregister/", "/v1/agent/service/deregister/aweb", ""),
		write("PUT /v1/agent/service/maintenance/", "/v1/agent/service/maintenance/aweb?enable=true", ""),
		read("GET /v1/agent/services", "/v1/agent/services"),
		read("GET /v1/agent/service/", "/v1/agent/service/aweb"),
		read("GET /v1/agent/health/service/id/", "/v1/agent/health/service/id/aweb"),
		read("GET /v1/agent/health/service/name/", "/v1/agent/health/service/name/web"),
		write("PUT /v1/agent/maintenance", "/v1/agent/maintenance?enable=true", ""),
		write("PUT /v1/agent/token/", "/v1/agent/token/default", `{"Token":"x"}`),
		write("PUT /v1/agent/reload", "/v1/agent/reload", ""),
	}

	covered := map[string]bool{}
	for _, s := range sweep {
		covered[s.pattern] = true
	}
	for _, r := range httpapi.EveryRoute() {
		if !covered[r] {
			problems = append(problems, "the sweep does not cover "+r)
		}
	}
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	for _, s := range sweep {
		method, _, _ := strings.Cut(s.pattern, " ")
		what := method + " " + s.path
		before := a.localState()
		reloads := a.reloads
		hash, applies := a.b.Store().Hash(), a.b.Store().Applies()
		var body any
		if s.body != "" {
			body = s.body
		}
		if s.pattern == "POST /v1/internal/acl/authorize" {
			body = `[{"Resource":"key","Segment":"other/k","Access":"read"}]`
		}
		r := a.call(method, s.path, "", body)
		if a.b.Store().Hash() != hash || a.b.Store().Applies() != applies {
			fail("%s: changed the replicated state", what)
		}
		if a.localState() != before || a.reloads != reloads {
			fail("%s: the local agent changed", what)
		}
		switch {
		case s.write && r.code != s.status:
			fail("%s: %d %q, want %d", what, r.code, r.text(), s.status)
		case !s.write && r.code == http.StatusForbidden:
		case !s.write && r.code == http.StatusNotFound && len(r.body) == 0:
			// A KV read that finds nothing it may read.
		case !s.write && (r.code < 200 || r.code > 299):
			fail("%s: %d %q, want 403 or an answer without records", what, r.code, r.text())
		case s.shows != nil:
			if err := s.shows(r.body); err != nil {
				fail("%s: %v: %s", what, err, r.text())
			}
		case !s.write:
			for _, sentinel := range sweepSentinels {
				if strings.Contains(r.text(), sentinel) {
					fail("%s: the anonymous answer shows %q: %s", what, sentinel, r.text())
				}
			}
		}
	}
	return problems
}

// noNodes judges a query execution's answer: it lists no node.
func noNodes(body []byte) error {
	var out struct{ Nodes []any }
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(out.Nodes) != 0 {
		return fmt.Errorf("%d nodes shown", len(out.Nodes))
	}
	return nil
}

// nothingAllowed judges an authorize answer: every decision is a denial.
func nothingAllowed(body []byte) error {
	var out []struct{ Allow bool }
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(out) == 0 {
		return fmt.Errorf("no decisions")
	}
	for _, d := range out {
		if d.Allow {
			return fmt.Errorf("a decision allows")
		}
	}
	return nil
}
