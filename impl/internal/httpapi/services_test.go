package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// registerWeb registers node with service web (ID web-<node>), a service
// check and a node check, through the official client.
func (f *fixture) registerWeb(node, address string, tags []string, svcStatus string) {
	f.t.Helper()
	_, err := f.client.Catalog().Register(&api.CatalogRegistration{
		Node: node, Address: address,
		Service: &api.AgentService{ID: "web-" + node, Service: "web", Tags: tags, Port: 80, Meta: map[string]string{"v": "1"}},
		Checks: api.HealthChecks{
			{CheckID: "web-alive", Name: "web alive", Status: svcStatus, ServiceID: "web-" + node, Notes: "n", Output: "ok", Type: "ttl"},
			{CheckID: "disk", Name: "disk", Status: "passing"},
		},
	}, nil)
	if err != nil {
		f.t.Fatalf("register %s: %v", node, err)
	}
}

// The catalog and health service reads answer Consul's shapes, with tag
// and ?passing filters and node checks among an instance's checks (S55).
func TestServiceReads(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", []string{"primary", "v1"}, "passing")
	f.registerWeb("n2", "10.0.0.2", []string{"v1"}, "warning")

	names, meta, err := f.client.Catalog().Services(nil)
	if err != nil || !slices.Equal(names["web"], []string{"primary", "v1"}) || meta.LastIndex == 0 {
		t.Fatalf("catalog services: %v %+v %v", names, meta, err)
	}
	all, _, err := f.client.Catalog().Service("web", "", nil)
	if err != nil || len(all) != 2 || all[0].ServiceID != "web-n1" || all[0].Address != "10.0.0.1" ||
		all[0].ServicePort != 80 || all[0].ServiceMeta["v"] != "1" || all[0].Datacenter != "dc1" {
		t.Fatalf("catalog service web: %+v %v", all, err)
	}
	// The tag filter ignores case, as Consul's does.
	if prim, _, _ := f.client.Catalog().Service("web", "PRIMARY", nil); len(prim) != 1 || prim[0].Node != "n1" {
		t.Fatalf("tag filter: %+v", prim)
	}
	if none, _, _ := f.client.Catalog().Service("nosuch", "", nil); none == nil || len(none) != 0 {
		t.Fatalf("unknown service: %#v, want []", none)
	}
	node, _, err := f.client.Catalog().Node("n1", nil)
	if err != nil || node == nil || node.Services["web-n1"] == nil || node.Services["web-n1"].Service != "web" {
		t.Fatalf("catalog node n1: %+v %v", node, err)
	}
	r := f.do(http.MethodGet, "/v1/catalog/node-services/n2", nil)
	want(t, "node-services", r, http.StatusOK, "")
	ns := decode[struct {
		Node     *api.Node
		Services []*api.AgentService
	}](t, r)
	if ns.Node == nil || ns.Node.Node != "n2" || len(ns.Services) != 1 || ns.Services[0].ID != "web-n2" {
		t.Fatalf("node-services n2: %s", r.text())
	}
	want(t, "node-services of an unknown node", f.do(http.MethodGet, "/v1/catalog/node-services/ghost", nil),
		http.StatusOK, `{"Node":null,"Services":null}`)

	entries, _, err := f.client.Health().Service("web", "", false, nil)
	if err != nil || len(entries) != 2 {
		t.Fatalf("health service: %+v %v", entries, err)
	}
	e := entries[0]
	if e.Node.Node != "n1" || e.Service.ID != "web-n1" || len(e.Checks) != 2 {
		t.Fatalf("health entry: %+v", e)
	}
	for _, c := range e.Checks {
		if c.CheckID == "web-alive" && (c.ServiceName != "web" || c.Notes != "n" || c.Output != "ok" || c.Type != "ttl" ||
			!slices.Equal(c.ServiceTags, []string{"primary", "v1"})) {
			t.Fatalf("service check fields: %+v", c)
		}
	}
	// ?passing drops n2, whose service check only warns.
	passing, _, _ := f.client.Health().Service("web", "", true, nil)
	if len(passing) != 1 || passing[0].Node.Node != "n1" {
		t.Fatalf("?passing: %+v", passing)
	}
	if tagged, _, _ := f.client.Health().Service("web", "primary", false, nil); len(tagged) != 1 {
		t.Fatalf("health ?tag: %+v", tagged)
	}
	checks, _, err := f.client.Health().Checks("web", nil)
	if err != nil || len(checks) != 2 || checks[0].ServiceID != "web-n1" || checks[1].ServiceID != "web-n2" {
		t.Fatalf("health checks web (no node checks): %+v %v", checks, err)
	}
	warning, _, _ := f.client.Health().State("warning", nil)
	if len(warning) != 1 || warning[0].ServiceName != "web" {
		t.Fatalf("warning state: %+v", warning)
	}
	nodeChecks, _, _ := f.client.Health().Node("n1", nil)
	if len(nodeChecks) != 2 {
		t.Fatalf("health node n1: %+v", nodeChecks)
	}

	// Bad input: a status and a one-line reason.
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/v1/catalog/service/", "Missing service name", 400},
		{"/v1/health/service/", "Missing service name", 400},
		{"/v1/health/checks/", "Missing service name", 400},
		{"/v1/catalog/node-services/", "Missing node name", 400},
		{"/v1/health/service/web?passing=maybe", "Invalid value for ?passing", 400},
		{"/v1/catalog/service/web?" + strings.Repeat("tag=t&", 65), "Too many Tag filters (65 > 64)", 413},
		{"/v1/catalog/services?stale&consistent", "", 400},
	} {
		want(t, tc.path, f.do(http.MethodGet, tc.path, nil), tc.code, tc.body)
	}
}

// Register writes node, service and checks together or not at all;
// deregistering a service takes its checks and invalidates the sessions
// bound to them (S55, S56).
func TestServiceRegisterAndDeregister(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", nil, "passing")
	before := f.b.Store().Hash()
	for _, tc := range []struct {
		what string
		body map[string]any
		code int
		text string
	}{
		{"check of an unknown service", map[string]any{"Node": "n1", "Address": "10.0.0.1",
			"Check": map[string]any{"CheckID": "x", "Status": "passing", "ServiceID": "nosuch"}}, 400, "Unknown service ID 'nosuch' for check ID 'x'"},
		{"service ID without a name", map[string]any{"Node": "n1", "Address": "10.0.0.1",
			"Service": map[string]any{"ID": "db"}}, 400, "Must provide service name (Service.Service) when service ID is provided"},
		{"too many tags", map[string]any{"Node": "n1", "Address": "10.0.0.1",
			"Service": map[string]any{"Service": "db", "Tags": make([]string, 65)}}, 413, "Too many Service tags (65 > 64)"},
		{"huge output", map[string]any{"Node": "n1", "Address": "10.0.0.1",
			"Check": map[string]any{"CheckID": "x", "Output": strings.Repeat("o", 4097)}}, 413, "Check output too long (4097 > 4096 bytes)"},
		{"service not an object", map[string]any{"Node": "n1", "Address": "10.0.0.1", "Service": "web"}, 400, ""},
	} {
		want(t, tc.what, f.doJSON(http.MethodPut, "/v1/catalog/register", tc.body), tc.code, tc.text)
	}
	if f.b.Store().Hash() != before {
		t.Fatal("a refused register changed the state")
	}
	// A service and its check in the same register: the check is accepted.
	want(t, "service with its check", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "n1", "Address": "10.0.0.1", "Service": map[string]any{"Service": "db", "Port": 5432},
		"Check": map[string]any{"CheckID": "db-alive", "Status": "passing", "ServiceID": "db"},
	}), http.StatusOK, "true")
	r := f.doJSON(http.MethodPut, "/v1/session/create", map[string]any{"Node": "n1", "Checks": []string{},
		"ServiceChecks": []map[string]string{{"ID": "web-alive"}}})
	want(t, "session bound by ServiceChecks", r, http.StatusOK, "")
	byCheck := decode[map[string]string](t, r)["ID"]
	byNode := f.session(&api.SessionEntry{Node: "n1", NodeChecks: []string{"db-alive"}})
	other := f.session(&api.SessionEntry{Node: "n1", NodeChecks: []string{"disk"}})
	if _, err := f.client.Catalog().Deregister(&api.CatalogDeregistration{Node: "n1", ServiceID: "web-n1"}, nil); err != nil {
		t.Fatal(err)
	}
	if se, _, _ := f.client.Session().Info(byCheck, nil); se != nil {
		t.Fatal("deregistering the service left a session bound to its check alive")
	}
	if checks, _, _ := f.client.Health().Checks("web", nil); len(checks) != 0 {
		t.Fatalf("the service's checks outlived it: %+v", checks)
	}
	if se, _, _ := f.client.Session().Info(other, nil); se == nil {
		t.Fatal("a session bound to a node check died with the service")
	}
	// A service check going critical invalidates like a node check (S12).
	want(t, "db-alive critical", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "n1", "Address": "10.0.0.1", "Check": map[string]any{"CheckID": "db-alive", "Status": "critical", "ServiceID": "db"},
	}), http.StatusOK, "true")
	if se, _, _ := f.client.Session().Info(byNode, nil); se != nil {
		t.Fatal("a service check going critical left its session alive")
	}
	want(t, "deregister ID too long", f.doJSON(http.MethodPut, "/v1/catalog/deregister",
		map[string]any{"Node": "n1", "ServiceID": strings.Repeat("s", 1025)}), 413, "Service ID too long (1025 > 1024 bytes)")
	// Deregistering a service the node does not have is done already.
	want(t, "deregister unknown service", f.doJSON(http.MethodPut, "/v1/catalog/deregister",
		map[string]any{"Node": "n1", "ServiceID": "nosuch"}), http.StatusOK, "true")
}

// A blocking health read of a service wakes when one of its checks
// changes, and answers the new status at the new index (S46, S55); a
// blocking query list wakes on a create.
func TestBlockingServiceReads(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", nil, "passing")
	_, meta, err := f.client.Health().Service("web", "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		entries []*api.ServiceEntry
		index   uint64
		err     error
	}
	ch := make(chan result, 1)
	reads := f.b.Store().Reads()
	go func() {
		e, m, err := f.client.Health().Service("web", "", true, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		if err != nil {
			ch <- result{err: err}
			return
		}
		ch <- result{e, m.LastIndex, nil}
	}()
	f.parkedAfter(reads)
	want(t, "web-alive warning", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "n1", "Address": "10.0.0.1", "Check": map[string]any{"CheckID": "web-alive", "Status": "warning", "ServiceID": "web-n1"},
	}), http.StatusOK, "true")
	select {
	case got := <-ch:
		if got.err != nil || len(got.entries) != 0 || got.index <= meta.LastIndex {
			t.Fatalf("woken ?passing read: %+v at %d (was %d), %v", got.entries, got.index, meta.LastIndex, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked health read never answered")
	}

	_, qmeta, err := f.client.PreparedQuery().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	reads = f.b.Store().Reads()
	qch := make(chan result, 1)
	go func() {
		l, m, err := f.client.PreparedQuery().List(&api.QueryOptions{WaitIndex: qmeta.LastIndex, WaitTime: time.Minute})
		if err != nil {
			qch <- result{err: err}
			return
		}
		qch <- result{make([]*api.ServiceEntry, len(l)), m.LastIndex, nil}
	}()
	f.parkedAfter(reads)
	if _, _, err := f.client.PreparedQuery().Create(&api.PreparedQueryDefinition{Name: "q", Service: api.ServiceQuery{Service: "web"}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-qch:
		if got.err != nil || len(got.entries) != 1 || got.index <= qmeta.LastIndex {
			t.Fatalf("woken query list: %d at %d, %v", len(got.entries), got.index, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked query list never answered")
	}
}

// A follower forwards service and query writes and default reads to the
// leader, and serves ?stale reads itself, like every other endpoint.
func TestServiceAndQueryForwarding(t *testing.T) {
	_, f, fwd := newPair(t)
	step := func(what string, forwarded bool, do func()) {
		t.Helper()
		n := fwd.count()
		do()
		if got := fwd.count() - n; (got == 1) != forwarded || got > 1 {
			t.Fatalf("%s: forwarded %d times, want forwarded=%v", what, got, forwarded)
		}
	}
	step("register service", true, func() { f.registerWeb("n1", "10.0.0.1", nil, "passing") })
	step("health service", true, func() {
		if e, _, err := f.client.Health().Service("web", "", false, nil); err != nil || len(e) != 1 {
			t.Fatalf("forwarded health read: %+v %v", e, err)
		}
	})
	step("stale catalog service", false, func() {
		if e, _, err := f.client.Catalog().Service("web", "", &api.QueryOptions{AllowStale: true}); err != nil || len(e) != 1 {
			t.Fatalf("stale catalog read: %+v %v", e, err)
		}
	})
	var id string
	step("query create", true, func() {
		var err error
		if id, _, err = f.client.PreparedQuery().Create(&api.PreparedQueryDefinition{Name: "q", Service: api.ServiceQuery{Service: "web"}}, nil); err != nil || id == "" {
			t.Fatalf("forwarded create: %q %v", id, err)
		}
	})
	step("stale execute", false, func() {
		if res, _, err := f.client.PreparedQuery().Execute("q", &api.QueryOptions{AllowStale: true}); err != nil || len(res.Nodes) != 1 {
			t.Fatalf("stale execute: %+v %v", res, err)
		}
	})
	step("query delete", true, func() {
		if _, err := f.client.PreparedQuery().Delete(id, nil); err != nil {
			t.Fatalf("forwarded delete: %v", err)
		}
	})
	step("deregister service", true, func() {
		if _, err := f.client.Catalog().Deregister(&api.CatalogDeregistration{Node: "n1", ServiceID: "web-n1"}, nil); err != nil {
			t.Fatal(err)
		}
	})
}
