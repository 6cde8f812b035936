package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
)

// filterCatalog registers two nodes, each with a redis instance and
// checks, for the ?filter tests (S66).
func filterCatalog(f *fixture) {
	f.t.Helper()
	for _, n := range []struct{ node, env, version, tag, status string }{
		{"n1", "prod", "1", "primary", "passing"},
		{"n2", "dev", "2", "replica", "warning"},
	} {
		want(f.t, "register "+n.node, f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
			"Node": n.node, "Address": "10.0.0." + n.node[1:], "NodeMeta": map[string]string{"env": n.env},
			"Service": map[string]any{"ID": "redis", "Service": "redis", "Tags": []string{n.tag, "v" + n.version},
				"Meta": map[string]string{"version": n.version}, "Port": 6379},
			"Checks": []map[string]any{
				{"CheckID": "svc", "Name": "svc", "Status": n.status, "ServiceID": "redis"},
				{"CheckID": "disk", "Name": "disk", "Status": "passing"},
			},
		}), http.StatusOK, "true")
	}
}

// filtered GETs path with ?filter=expr (and extra, a query string).
func (f *fixture) filtered(path, expr, extra string) reply {
	f.t.Helper()
	q := "?filter=" + url.QueryEscape(expr)
	if extra != "" {
		q += "&" + extra
	}
	return f.do(http.MethodGet, path+q, nil)
}

// Each read Consul filters keeps the entries the expression selects, by
// the fields of Consul's own types, and answers the index it answers
// without a filter.
func TestFilterOnEveryRead(t *testing.T) {
	f := newFixture(t)
	filterCatalog(f)
	nodes := func(r reply) []string {
		var out []string
		for _, e := range decode[[]struct{ Node string }](t, r) {
			out = append(out, e.Node)
		}
		return out
	}
	checks := func(r reply) []string {
		var out []string
		for _, e := range decode[[]struct{ Node, CheckID string }](t, r) {
			out = append(out, e.Node+"/"+e.CheckID)
		}
		return out
	}
	healthNodes := func(r reply) []string {
		var out []string
		for _, e := range decode[[]struct{ Node struct{ Node string } }](t, r) {
			out = append(out, e.Node.Node)
		}
		return out
	}
	for _, tc := range []struct {
		path, expr string
		got        func(reply) []string
		want       []string
	}{
		{"/v1/catalog/nodes", "Meta.env == dev", nodes, []string{"n2"}},
		{"/v1/catalog/nodes", `Node matches "^n[0-9]$" and Address != "10.0.0.2"`, nodes, []string{"n1"}},
		{"/v1/catalog/service/redis", "ServiceMeta.version == 1", nodes, []string{"n1"}},
		{"/v1/catalog/service/redis", "replica in ServiceTags and NodeMeta.env == dev", nodes, []string{"n2"}},
		{"/v1/catalog/service/redis", "ServiceConnect.Native == true", nodes, nil},
		{"/v1/health/node/n1", "ServiceID == ``", checks, []string{"n1/disk"}},
		{"/v1/health/checks/redis", "Status == warning", checks, []string{"n2/svc"}},
		{"/v1/health/state/any", "ServiceName == redis and Status != passing", checks, []string{"n2/svc"}},
		{"/v1/health/state/passing", "Node == n2", checks, []string{"n2/disk"}},
		{"/v1/health/service/redis", "Checks.Status == warning", healthNodes, []string{"n2"}},
		{"/v1/health/service/redis", "Node.Meta.env == prod and Service.Meta.version == 1", healthNodes, []string{"n1"}},
		{"/v1/health/service/redis", "Service.Proxy.Upstreams is not empty", healthNodes, nil},
	} {
		r := f.filtered(tc.path, tc.expr, "")
		want(t, tc.path+" "+tc.expr, r, http.StatusOK, "")
		if got := tc.got(r); !slices.Equal(got, tc.want) {
			t.Errorf("%s ?filter=%s: got %v, want %v", tc.path, tc.expr, got, tc.want)
		}
		if plain := f.do(http.MethodGet, tc.path, nil); plain.header.Get("X-Consul-Index") != r.header.Get("X-Consul-Index") {
			t.Errorf("%s ?filter=%s: index %s, unfiltered %s", tc.path, tc.expr,
				r.header.Get("X-Consul-Index"), plain.header.Get("X-Consul-Index"))
		}
	}

	// /v1/catalog/services filters instances, then groups them by name.
	r := f.filtered("/v1/catalog/services", "NodeMeta.env == dev", "")
	want(t, "catalog services", r, http.StatusOK, `{"redis":["replica","v2"]}`)
	r = f.filtered("/v1/catalog/services", "ServiceName == nothing", "")
	want(t, "catalog services, nothing kept", r, http.StatusOK, `{}`)

	// A node's services, as a map and as a list; an unknown node is
	// answered as without a filter.
	r = f.filtered("/v1/catalog/node/n1", "v2 in Tags", "")
	if got := decode[struct{ Services map[string]any }](t, r); len(got.Services) != 0 {
		t.Errorf("catalog node n1, v2 in Tags: %s", r.text())
	}
	r = f.filtered("/v1/catalog/node/n1", "Meta.version == 1", "")
	if got := decode[struct{ Services map[string]any }](t, r); len(got.Services) != 1 {
		t.Errorf("catalog node n1, version 1: %s", r.text())
	}
	r = f.filtered("/v1/catalog/node-services/n2", "Port == 6379 and Weights.Passing == 1", "")
	if got := decode[struct{ Services []any }](t, r); len(got.Services) != 1 {
		t.Errorf("node-services n2: %s", r.text())
	}
	want(t, "catalog node of an unknown node", f.filtered("/v1/catalog/node/ghost", "Port == 1", ""), http.StatusOK, "null")

	// ?filter narrows what ?tag, ?node-meta and ?passing leave.
	r = f.filtered("/v1/health/service/redis", "Node.Node == n1", "passing")
	if got := healthNodes(r); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("health service ?passing&filter: %v", got)
	}
	r = f.filtered("/v1/catalog/service/redis", "Node == n1", "tag=replica")
	want(t, "catalog service ?tag&filter", r, http.StatusOK, "[]")
}

// A refused expression answers 400 with go-bexpr's one-line reason (500
// with Options.Compat, as Consul) on every filtered read, before the read
// looks at the state, and changes nothing.
func TestFilterRefusals(t *testing.T) {
	paths := []string{"/v1/catalog/nodes", "/v1/catalog/services", "/v1/catalog/service/redis",
		"/v1/catalog/node/n1", "/v1/catalog/node-services/n1", "/v1/health/node/n1",
		"/v1/health/checks/redis", "/v1/health/state/any", "/v1/health/service/redis"}
	bad := []struct{ expr, reason string }{
		{"Foo == 1", `Selector "Foo" is not valid`},
		{"Node ==", "no match found"},
		{"((Node == a)", "Unmatched parentheses"},
		{"not", "no match found"},
	}
	for _, compat := range []bool{false, true} {
		f := newFixture(t, withOptions(httpapi.Options{Compat: compat}))
		filterCatalog(f)
		code := http.StatusBadRequest
		if compat {
			code = http.StatusInternalServerError
		}
		hash, reads := f.b.Store().Hash(), f.b.Store().Reads()
		check := func(p, expr, reason string) {
			t.Helper()
			r := f.filtered(p, expr, "index=1")
			if r.code != code || !strings.HasPrefix(r.text(), "Failed to create boolean expression evaluator: ") ||
				!strings.Contains(r.text(), reason) || strings.Contains(r.text(), "\n") {
				t.Errorf("compat %v, %s ?filter=%.40s: got %d %q, want %d with %q", compat, p, expr, r.code, r.text(), code, reason)
			}
		}
		for _, p := range paths {
			for _, b := range bad {
				check(p, b.expr, b.reason)
			}
		}
		check("/v1/catalog/nodes", strings.Repeat("(", 8)+"Node == a"+strings.Repeat(")", 8), "expression too complex")
		if f.b.Store().Hash() != hash || f.b.Store().Reads() != reads {
			t.Errorf("compat %v: refused filters read or changed the state", compat)
		}
	}
	// A field Consul's type lacks is refused even where tenure's answer
	// shows it, as on Consul (structs.Node hides its indexes).
	f := newFixture(t)
	want(t, "a bad regular expression", f.filtered("/v1/catalog/nodes", `Node matches "("`, ""), http.StatusBadRequest,
		"Failed to create boolean expression evaluator: Failed to compile regular expression \"(\": error parsing regexp: missing closing ): `(`")
	r := f.filtered("/v1/catalog/nodes", "CreateIndex == 1", "")
	want(t, "a selector Consul hides", r, http.StatusBadRequest,
		`Failed to create boolean expression evaluator: Selector "CreateIndex" is not valid`)
	// Other endpoints ignore ?filter, as Consul's do.
	want(t, "session list with a filter", f.filtered("/v1/session/list", "Foo ==", ""), http.StatusOK, "[]")
}

// The filter runs after a blocking read resolves: a read whose filter
// keeps nothing still wakes on any change to its tables and answers the
// new index, as Consul's does; its answer is the filtered one.
func TestFilterKeepsBlockingSemantics(t *testing.T) {
	f := newFixture(t)
	filterCatalog(f)
	first := f.filtered("/v1/health/service/redis", "Node.Meta.env == dev", "")
	index := first.header.Get("X-Consul-Index")
	if got := decode[[]any](t, first); len(got) != 1 {
		t.Fatalf("before: %s", first.text())
	}
	reads := f.b.Store().Reads()
	done := make(chan reply, 1)
	go func() {
		done <- f.filtered("/v1/health/service/redis", "Node.Meta.env == dev", "index="+index+"&wait=5m")
	}()
	f.parkedAfter(reads)
	// A change to n1's check: the filter drops n1, but the index moves.
	want(t, "n1 check critical", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "n1", "Address": "10.0.0.1", "NodeMeta": map[string]string{"env": "prod"},
		"Check": map[string]any{"CheckID": "svc", "Name": "svc", "Status": "critical", "ServiceID": "redis"},
	}), http.StatusOK, "true")
	var r reply
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked, filtered read never woke")
	}
	if r.code != http.StatusOK || r.header.Get("X-Consul-Index") == index {
		t.Fatalf("woken read: %d index %s (was %s) %s", r.code, r.header.Get("X-Consul-Index"), index, r.text())
	}
	if got := decode[[]struct{ Node struct{ Node string } }](t, r); len(got) != 1 || got[0].Node.Node != "n2" {
		t.Fatalf("woken read kept %s", r.text())
	}
}

// fixedMembers is a gossip pool of fixed members.
type fixedMembers []gossip.Member

func (m fixedMembers) List() []gossip.Member       { return m }
func (fixedMembers) Local() gossip.Member          { return gossip.Member{} }
func (fixedMembers) Join([]string) (int, error)    { return 0, nil }
func (fixedMembers) Leave() error                  { return nil }
func (fixedMembers) ForceLeave(string, bool) error { return nil }
func (fixedMembers) Stats() map[string]string      { return nil }

// /v1/agent/members filters serf's member fields.
func TestFilterMembers(t *testing.T) {
	pool := fixedMembers{
		{Member: reconcile.Member{Name: "s1"}, IP: "10.0.0.1", Port: 8301, Tags: map[string]string{"role": "consul"}, SerfStatus: 1},
		{Member: reconcile.Member{Name: "c1"}, IP: "10.0.0.2", Port: 8301, Tags: map[string]string{"role": "node"}, SerfStatus: 4},
	}
	f := newFixture(t, withOptions(httpapi.Options{Members: pool}))
	for expr, wantNames := range map[string][]string{
		"Tags.role == consul":                {"s1"},
		"Status == 4":                        {"c1"},
		"Port == 8301 and Name matches `1$`": {"s1", "c1"},
		"Addr is empty":                      nil,
	} {
		r := f.filtered("/v1/agent/members", expr, "")
		want(t, "members "+expr, r, http.StatusOK, "")
		var names []string
		for _, m := range decode[[]struct{ Name string }](t, r) {
			names = append(names, m.Name)
		}
		if !slices.Equal(names, wantNames) {
			t.Errorf("members ?filter=%s: %v, want %v", expr, names, wantNames)
		}
	}
	want(t, "members, a value out of range", f.filtered("/v1/agent/members", "Port == 70000", ""), http.StatusBadRequest,
		`Failed to create boolean expression evaluator: Failed to coerce value "70000" for selector "Port": strconv.ParseUint: parsing "70000": value out of range`)
}

// The agent's own services and checks take ?filter over api.AgentService
// and structs.HealthCheck.
func TestFilterAgentLocal(t *testing.T) {
	f := newLocalFixture(t)
	f.ok(http.MethodPut, "/v1/agent/service/register", `{"Name":"web","Tags":["a"],"Meta":{"v":"1"},"Port":80}`)
	f.ok(http.MethodPut, "/v1/agent/service/register", `{"Name":"api","Tags":["b"],"Port":81}`)
	f.ok(http.MethodPut, "/v1/agent/check/register", `{"Name":"mem","TTL":"30s"}`)
	f.ok(http.MethodPut, "/v1/agent/check/register", `{"Name":"web-up","TTL":"30s","ServiceID":"web"}`)
	keys := func(body string) []string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		path, expr string
		want       []string
	}{
		{"/v1/agent/services", "a in Tags", []string{"web"}},
		{"/v1/agent/services", "Meta.v != 1", []string{"api"}},
		{"/v1/agent/services", "Connect.Native == true or Proxy.DestinationServiceName != ``", nil},
		{"/v1/agent/checks", "Name == mem", []string{"mem"}},
		{"/v1/agent/checks", "web in ServiceTags or ServiceID == web", []string{"web-up"}},
		{"/v1/agent/checks", `Node == "node-a"`, []string{"mem", "web-up"}},
	} {
		code, body := f.do(http.MethodGet, tc.path+"?filter="+url.QueryEscape(tc.expr), "")
		if got := keys(body); code != http.StatusOK || !slices.Equal(got, tc.want) {
			t.Errorf("%s ?filter=%s: %d %v, want %v", tc.path, tc.expr, code, got, tc.want)
		}
	}
	for path, expr := range map[string]string{"/v1/agent/services": "Datacenter == dc1", "/v1/agent/checks": "Definition.HTTP == x"} {
		code, body := f.do(http.MethodGet, path+"?filter="+url.QueryEscape(expr), "")
		sel, _, _ := strings.Cut(expr, ".")
		sel, _, _ = strings.Cut(sel, " ")
		if w := fmt.Sprintf("Failed to create boolean expression evaluator: Selector %q is not valid", sel); code != http.StatusBadRequest || body != w {
			t.Errorf("%s ?filter=%s: %d %q, want 400 %q", path, expr, code, body, w)
		}
	}
}
