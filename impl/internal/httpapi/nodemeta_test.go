package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
)

// ?node-meta filters the catalog and health reads by node meta, as
// `consul catalog nodes|services -node-meta k=v` asks. The catalog keeps no
// node meta, so any pair matches no node; without the filter everything is
// listed. An over-long filter is refused with tenure's 413 and a reason,
// like every other over-long label.
func TestNodeMetaFilter(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", []string{"v1"}, "passing")

	filtered := &api.QueryOptions{NodeMeta: map[string]string{"rack": "r1"}}
	if nodes, _, err := f.client.Catalog().Nodes(filtered); err != nil || nodes == nil || len(nodes) != 0 {
		t.Fatalf("catalog nodes with node-meta: %+v %v, want []", nodes, err)
	}
	if nodes, _, err := f.client.Catalog().Nodes(nil); err != nil || len(nodes) == 0 {
		t.Fatalf("catalog nodes without filter: %+v %v", nodes, err)
	}
	if names, _, err := f.client.Catalog().Services(filtered); err != nil || names == nil || len(names) != 0 {
		t.Fatalf("catalog services with node-meta: %+v %v, want {}", names, err)
	}
	if names, _, err := f.client.Catalog().Services(nil); err != nil || len(names["web"]) == 0 {
		t.Fatalf("catalog services without filter: %+v %v", names, err)
	}
	if svc, _, err := f.client.Catalog().Service("web", "", filtered); err != nil || svc == nil || len(svc) != 0 {
		t.Fatalf("catalog service with node-meta: %+v %v", svc, err)
	}
	if entries, _, err := f.client.Health().Service("web", "", false, filtered); err != nil || entries == nil || len(entries) != 0 {
		t.Fatalf("health service with node-meta: %+v %v", entries, err)
	}
	if entries, _, err := f.client.Health().Service("web", "", false, nil); err != nil || len(entries) != 1 {
		t.Fatalf("health service without filter: %+v %v", entries, err)
	}
	if checks, _, err := f.client.Health().Checks("web", filtered); err != nil || checks == nil || len(checks) != 0 {
		t.Fatalf("health checks with node-meta: %+v %v", checks, err)
	}
	if checks, _, err := f.client.Health().State("any", filtered); err != nil || checks == nil || len(checks) != 0 {
		t.Fatalf("health state with node-meta: %+v %v", checks, err)
	}
	if checks, _, err := f.client.Health().State("any", nil); err != nil || len(checks) == 0 {
		t.Fatalf("health state without filter: %+v %v", checks, err)
	}
	// A pair without a colon asks for the key with an empty value: still
	// no node has it.
	want(t, "node-meta key only", f.do(http.MethodGet, "/v1/catalog/nodes?node-meta=rack", nil), http.StatusOK, "[]")

	long := strings.Repeat("k", 2000)
	r := f.do(http.MethodGet, "/v1/catalog/nodes?node-meta="+long+":v", nil)
	if r.code != http.StatusRequestEntityTooLarge || !strings.Contains(r.text(), "Node meta filter key") {
		t.Fatalf("oversized node-meta key: %d %s", r.code, r.text())
	}
	r = f.do(http.MethodGet, "/v1/health/service/web?node-meta="+long, nil)
	if r.code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized node-meta on health service: %d %s", r.code, r.text())
	}
}
