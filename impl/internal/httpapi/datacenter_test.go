package httpapi_test

import (
	"net/http"
	"testing"
)

// A request naming another datacenter is refused as Consul refuses it, on
// every endpoint that takes ?dc, and changes nothing; the agent's own
// datacenter, named exactly, is served.
func TestUnknownDatacenterRefused(t *testing.T) {
	f := newFixture(t)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/status/leader?dc=other"},
		{http.MethodGet, "/v1/status/peers?dc=other"},
		{http.MethodGet, "/v1/status/leader?datacenter=other"},
		{http.MethodGet, "/v1/status/leader?dc=DC1"}, // Consul compares exactly
		{http.MethodGet, "/v1/kv/k?dc=other"},
		{http.MethodPut, "/v1/kv/k?dc=other"},
		{http.MethodDelete, "/v1/kv/k?dc=other"},
		{http.MethodPut, "/v1/session/create?dc=other"},
		{http.MethodGet, "/v1/session/list?dc=other"},
		{http.MethodGet, "/v1/catalog/nodes?dc=other"},
		{http.MethodGet, "/v1/catalog/services?dc=other"},
		{http.MethodGet, "/v1/health/service/web?dc=other"},
		{http.MethodGet, "/v1/query?dc=other"},
		{http.MethodGet, "/v1/operator/raft/configuration?dc=other"},
	} {
		got := f.do(r.method, r.path, nil)
		want(t, r.method+" "+r.path, got, http.StatusInternalServerError, "No path to datacenter")
	}
	if got := f.do(http.MethodGet, "/v1/kv/k", nil); got.code != http.StatusNotFound {
		t.Fatalf("a refused put stored the key: %d %q", got.code, got.text())
	}
	want(t, "own datacenter", f.do(http.MethodGet, "/v1/kv/k?dc=dc1", nil), http.StatusNotFound, "")
	want(t, "?datacenter wins over ?dc", f.do(http.MethodGet, "/v1/kv/k?dc=other&datacenter=dc1", nil), http.StatusNotFound, "")
	// The agent's own endpoints and the datacenter list never look at ?dc.
	want(t, "agent self", f.do(http.MethodGet, "/v1/agent/self?dc=other", nil), http.StatusOK, "")
	want(t, "datacenters", f.do(http.MethodGet, "/v1/catalog/datacenters?dc=other", nil), http.StatusOK, "")
}

// The catalog register and deregister name their datacenter in the body.
func TestCatalogWriteDatacenterInBody(t *testing.T) {
	f := newFixture(t)
	reg := map[string]any{"Datacenter": "other", "Node": "web-1", "Address": "10.0.0.1"}
	want(t, "register elsewhere", f.doJSON(http.MethodPut, "/v1/catalog/register", reg), http.StatusInternalServerError, "No path to datacenter")
	want(t, "node after a refused register", f.do(http.MethodGet, "/v1/catalog/node/web-1", nil), http.StatusOK, "null")
	reg["Datacenter"] = "dc1"
	want(t, "register here, ?dc ignored", f.doJSON(http.MethodPut, "/v1/catalog/register?dc=other", reg), http.StatusOK, "true")
	dereg := map[string]any{"Datacenter": "other", "Node": "web-1"}
	want(t, "deregister elsewhere", f.doJSON(http.MethodPut, "/v1/catalog/deregister", dereg), http.StatusInternalServerError, "No path to datacenter")
	if got := f.do(http.MethodGet, "/v1/catalog/node/web-1", nil); got.text() == "null" {
		t.Fatal("a refused deregister removed the node")
	}
}
