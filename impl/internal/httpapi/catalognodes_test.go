package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// TestNodeInfoThroughTheAPI: a register's ID, tagged addresses and meta
// come back on every read that shows a node, and ?node-meta selects by
// them on the catalog and health reads (S62).
func TestNodeInfoThroughTheAPI(t *testing.T) {
	f := newFixture(t, withOptions(httpapi.Options{NodeID: "4f5a3c1e-0000-4000-8000-00000000000a"}))
	const id = "4f5a3c1e-0000-4000-8000-000000000001"
	reg := &api.CatalogRegistration{Node: "n1", ID: id, Address: "10.0.0.1",
		TaggedAddresses: map[string]string{"lan": "10.0.0.1"}, NodeMeta: map[string]string{"rack": "r1"},
		Service: &api.AgentService{ID: "web1", Service: "web"},
		Check:   &api.AgentCheck{CheckID: "web1-up", Name: "up", Status: api.HealthPassing, ServiceID: "web1"}}
	if _, err := f.client.Catalog().Register(reg, nil); err != nil {
		t.Fatal(err)
	}
	node, _, err := f.client.Catalog().Node("n1", nil)
	if err != nil || node == nil {
		t.Fatalf("catalog node: %v %v", node, err)
	}
	if node.Node.ID != id || node.Node.Meta["rack"] != "r1" || node.Node.TaggedAddresses["lan"] != "10.0.0.1" {
		t.Errorf("catalog node: %+v", node.Node)
	}
	instances, _, err := f.client.Catalog().Service("web", "", &api.QueryOptions{NodeMeta: map[string]string{"rack": "r1"}})
	if err != nil || len(instances) != 1 || instances[0].ID != id || instances[0].NodeMeta["rack"] != "r1" {
		t.Errorf("catalog service by node meta: %+v %v", instances, err)
	}

	other := &api.QueryOptions{NodeMeta: map[string]string{"rack": "r2"}}
	for what, n := range map[string]func() (int, error){
		"catalog nodes": func() (int, error) { l, _, err := f.client.Catalog().Nodes(other); return len(l), err },
		"catalog services": func() (int, error) {
			l, _, err := f.client.Catalog().Services(other)
			return len(l), err
		},
		"catalog service": func() (int, error) { l, _, err := f.client.Catalog().Service("web", "", other); return len(l), err },
		"health service": func() (int, error) {
			l, _, err := f.client.Health().Service("web", "", false, other)
			return len(l), err
		},
		"health checks": func() (int, error) { l, _, err := f.client.Health().Checks("web", other); return len(l), err },
		"health state":  func() (int, error) { l, _, err := f.client.Health().State("any", other); return len(l), err },
	} {
		if got, err := n(); err != nil || got != 0 {
			t.Errorf("%s with another rack: %d entries, %v; want none", what, got, err)
		}
	}
	if l, _, err := f.client.Health().State("any", &api.QueryOptions{NodeMeta: map[string]string{"rack": "r1"}}); err != nil || len(l) != 1 {
		t.Errorf("health state with n1's rack: %d checks, %v; want n1's one", len(l), err)
	}

	self, err := f.client.Agent().Self()
	if err != nil || self["Config"]["NodeID"] != "4f5a3c1e-0000-4000-8000-00000000000a" {
		t.Errorf("agent self NodeID: %v %v", self["Config"]["NodeID"], err)
	}
}

// TestSkipNodeUpdateNeedsNoAddress: a register that leaves its node alone
// may omit the address, and leaves an existing node's as it was; without
// SkipNodeUpdate the address is required (S62).
func TestSkipNodeUpdateNeedsNoAddress(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{
		`{"Node":"z1","Address":"10.9.0.1"}`,
		`{"Node":"z1","SkipNodeUpdate":true,"Check":{"CheckID":"c","Name":"c","Status":"passing"}}`,
	} {
		if r := f.do(http.MethodPut, "/v1/catalog/register", []byte(body)); r.code != 200 {
			t.Fatalf("register %s: %d %s", body, r.code, r.text())
		}
	}
	node, _, err := f.client.Catalog().Node("z1", nil)
	if err != nil || node == nil || node.Node.Address != "10.9.0.1" {
		t.Errorf("z1 after a SkipNodeUpdate register without an address: %+v %v", node, err)
	}
	if r := f.do(http.MethodPut, "/v1/catalog/register", []byte(`{"Node":"z2"}`)); r.code != http.StatusBadRequest || r.text() != "Must provide address" {
		t.Errorf("register without an address: %d %q", r.code, r.text())
	}
}

// TestBadNodeIDRefused: a node ID that is not a UUID is refused with
// Consul's words, 400 here and 500 in the compat profile, and nothing is
// written.
func TestBadNodeIDRefused(t *testing.T) {
	for _, compat := range []bool{false, true} {
		f := newFixture(t, withOptions(httpapi.Options{Compat: compat}))
		r := f.do(http.MethodPut, "/v1/catalog/register", []byte(`{"Node":"n1","ID":"xyz","Address":"10.0.0.1"}`))
		want := http.StatusBadRequest
		if compat {
			want = http.StatusInternalServerError
		}
		if r.code != want || !strings.HasPrefix(r.text(), "Bad node ID: ") {
			t.Errorf("compat %v: got %d %q, want %d Bad node ID", compat, r.code, r.text(), want)
		}
		if n := f.do(http.MethodGet, "/v1/catalog/node/n1", nil); n.text() != "null" {
			t.Errorf("compat %v: a refused register wrote the node: %s", compat, n.text())
		}
	}
}
