package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/hashicorp/consul/api"
)

func TestCatalogAndHealth(t *testing.T) {
	f := newFixture(t)
	want(t, "register", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "web-1", "Address": "10.0.0.5", "TaggedAddresses": map[string]string{"lan": "10.0.0.5"},
		"Checks": []map[string]any{
			{"Node": "web-1", "CheckID": "disk", "Name": "Disk", "Status": "passing"},
			{"Name": "mem", "Status": "warning"}, // CheckID defaults to Name
		},
	}), http.StatusOK, "true")
	nodes, meta, err := f.client.Catalog().Nodes(nil)
	if err != nil || len(nodes) != 2 || nodes[1].Node != "web-1" || nodes[1].Address != "10.0.0.5" || nodes[1].Datacenter != "dc1" {
		t.Fatalf("nodes: %+v %v", nodes, err)
	}
	if meta.LastIndex != nodes[1].CreateIndex {
		t.Fatalf("nodes index %d, want %d", meta.LastIndex, nodes[1].CreateIndex)
	}
	cn, _, err := f.client.Catalog().Node("web-1", nil)
	if err != nil || cn == nil || cn.Node == nil || cn.Node.Address != "10.0.0.5" || len(cn.Services) != 0 {
		t.Fatalf("catalog node web-1: %+v %v", cn, err)
	}
	want(t, "catalog node unknown", f.do(http.MethodGet, "/v1/catalog/node/ghost", nil), http.StatusOK, "null")
	checks, _, err := f.client.Health().Node("web-1", nil)
	if err != nil || len(checks) != 2 || checks[0].CheckID != "disk" || checks[0].Name != "Disk" ||
		checks[1].CheckID != "mem" || checks[1].Status != "warning" {
		t.Fatalf("health of web-1: %+v %v", checks, err)
	}
	if empty, _, _ := f.client.Health().Node("ghost", nil); empty == nil || len(empty) != 0 {
		t.Fatalf("health of an unknown node: %#v, want []", empty)
	}
	warning, _, err := f.client.Health().State("warning", nil)
	if err != nil || len(warning) != 1 || warning[0].CheckID != "mem" {
		t.Fatalf("warning checks: %+v %v", warning, err)
	}
	all, _, _ := f.client.Health().State("any", nil)
	if len(all) != 3 {
		t.Fatalf("any: %d checks, want 3", len(all))
	}

	// A session bound to a check dies when the check goes critical (S12, S48)
	// and its lock is released; warning does not invalidate.
	sid := f.session(&api.SessionEntry{Node: "web-1", NodeChecks: []string{"disk", "mem"}})
	f.acquire("web/lock", sid, "")
	want(t, "still warning", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "web-1", "Address": "10.0.0.5", "Check": map[string]any{"CheckID": "mem", "Name": "mem", "Status": "warning"},
	}), http.StatusOK, "true")
	if se, _, _ := f.client.Session().Info(sid, nil); se == nil {
		t.Fatal("a warning check invalidated the session")
	}
	// A check registered without a status is critical, as in Consul.
	want(t, "status-less check", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "web-1", "Address": "10.0.0.5", "Check": map[string]any{"CheckID": "disk"},
	}), http.StatusOK, "true")
	if se, _, _ := f.client.Session().Info(sid, nil); se != nil {
		t.Fatal("a check registered without status (critical) left its session alive")
	}
	if p := f.get("web/lock"); p.Session != "" {
		t.Fatalf("lock still held after invalidation: %+v", p)
	}
	// Deregistering a check invalidates sessions bound to it (S11).
	sid = f.session(&api.SessionEntry{Node: "web-1", NodeChecks: []string{"mem"}})
	want(t, "deregister check", f.doJSON(http.MethodPut, "/v1/catalog/deregister",
		map[string]any{"Node": "web-1", "CheckID": "mem"}), http.StatusOK, "true")
	if se, _, _ := f.client.Session().Info(sid, nil); se != nil {
		t.Fatal("deregistering the bound check left the session alive")
	}
	want(t, "deregister node", f.doJSON(http.MethodPut, "/v1/catalog/deregister",
		map[string]any{"Node": "web-1"}), http.StatusOK, "true")
	if nodes, _, _ := f.client.Catalog().Nodes(nil); len(nodes) != 1 {
		t.Fatalf("nodes after deregister: %+v", nodes)
	}
}

// Agent check updates write the status of the serving node's check (S48).
func TestAgentCheckUpdates(t *testing.T) {
	f := newFixture(t)
	sid := f.session(nil) // bound to node-a's serfHealth
	status := func() string {
		checks, _, err := f.client.Health().Node("node-a", nil)
		if err != nil || len(checks) != 1 {
			t.Fatalf("node-a checks: %+v %v", checks, err)
		}
		return checks[0].Status
	}
	want(t, "warn", f.do(http.MethodPut, "/v1/agent/check/warn/serfHealth", nil), http.StatusOK, "")
	if status() != "warning" {
		t.Fatalf("after warn: %s", status())
	}
	if err := f.client.Agent().PassTTL("serfHealth", ""); err != nil {
		t.Fatal(err)
	}
	if status() != "passing" {
		t.Fatalf("after pass: %s", status())
	}
	if se, _, _ := f.client.Session().Info(sid, nil); se == nil {
		t.Fatal("pass/warn invalidated the session")
	}
	if err := f.client.Agent().FailTTL("serfHealth", ""); err != nil {
		t.Fatal(err)
	}
	if status() != "critical" {
		t.Fatalf("after fail: %s", status())
	}
	if se, _, _ := f.client.Session().Info(sid, nil); se != nil {
		t.Fatal("fail left the session bound to serfHealth alive")
	}
	// While serfHealth is critical, a default create is refused (S6).
	want(t, "create on a critical node", f.do(http.MethodPut, "/v1/session/create", nil),
		http.StatusBadRequest, "Check 'serfHealth' is in critical state")
}

func TestStatusAndAgentSelf(t *testing.T) {
	f := newFixture(t)
	if name, err := f.client.Agent().NodeName(); err != nil || name != "node-a" {
		t.Fatalf("agent node name %q %v", name, err)
	}
	leader, err := f.client.Status().Leader()
	if err != nil || leader != "127.0.0.1:8300" {
		t.Fatalf("leader %q %v", leader, err)
	}
	peers, err := f.client.Status().Peers()
	if err != nil || !slices.Equal(peers, []string{"127.0.0.1:8300"}) {
		t.Fatalf("peers %v %v", peers, err)
	}
}
