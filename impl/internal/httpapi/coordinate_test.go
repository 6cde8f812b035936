package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/serf/coordinate"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// vec8 is an 8-dimensional vector with x in its first component.
func vec8(x float64) []float64 { return []float64{x, 0, 0, 0, 0, 0, 0, 0} }

func (f *fixture) register(node string) {
	f.t.Helper()
	if _, err := f.client.Catalog().Register(&api.CatalogRegistration{Node: node, Address: "127.0.0.1"}, nil); err != nil {
		f.t.Fatalf("register %s: %v", node, err)
	}
}

func (f *fixture) coordinate(node string, x float64) {
	f.t.Helper()
	c := &coordinate.Coordinate{Vec: vec8(x), Error: 1.5, Height: 1e-5}
	if _, err := f.client.Coordinate().Update(&api.CoordinateEntry{Node: node, Coord: c}, nil); err != nil {
		f.t.Fatalf("coordinate of %s: %v", node, err)
	}
}

// TestCoordinateUpdateAndReads: an update answers 200 with no body; the
// reads list it, sorted by node; a node without one answers a bare 404; an
// update for a node the catalog lacks is accepted and dropped (S89).
func TestCoordinateUpdateAndReads(t *testing.T) {
	f := newFixture(t)
	f.register("n2")
	f.register("n1")
	r := f.doJSON("PUT", "/v1/coordinate/update", map[string]any{"Node": "n2",
		"Coord": map[string]any{"Vec": vec8(0.002), "Error": 1.5, "Height": 1e-5}})
	want(t, "update", r, 200, "")
	if len(r.body) != 0 {
		t.Fatalf("update answered a body %q", r.text())
	}
	f.coordinate("n1", 0.001)
	f.coordinate("ghost", 0.003)

	list, meta, err := f.client.Coordinate().Nodes(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Node != "n1" || list[1].Node != "n2" || list[1].Coord.Vec[0] != 0.002 {
		t.Fatalf("nodes: %+v", list)
	}
	if meta.LastIndex == 0 {
		t.Fatal("nodes: no index")
	}
	one, _, err := f.client.Coordinate().Node("N1", nil)
	if err != nil || len(one) != 1 || one[0].Coord.Vec[0] != 0.001 {
		t.Fatalf("node N1: %+v, %v", one, err)
	}
	want(t, "node without a coordinate", f.do("GET", "/v1/coordinate/node/ghost", nil), 404, "")
	want(t, "segment filter", f.do("GET", "/v1/coordinate/nodes?segment=other", nil), 200, "[]")

	// A deregistered node's coordinate goes with it.
	if _, err := f.client.Catalog().Deregister(&api.CatalogDeregistration{Node: "n2"}, nil); err != nil {
		t.Fatal(err)
	}
	want(t, "deregistered node", f.do("GET", "/v1/coordinate/node/n2", nil), 404, "")
}

// TestCoordinateUpdateRefusals: each bad update answers with a reason and
// changes nothing.
func TestCoordinateUpdateRefusals(t *testing.T) {
	f := newFixture(t)
	f.register("n1")
	cases := []struct {
		name, body string
		code       int
		text       string
	}{
		{"bad JSON", `{"Node":`, 400, "Request decode failed: unexpected end of JSON input"},
		{"NaN", `{"Node":"n1","Coord":{"Vec":[NaN]}}`, 400, "Request decode failed: invalid character 'N' looking for beginning of value"},
		{"overflow", `{"Node":"n1","Coord":{"Vec":[1e400]}}`, 400, ""},
		{"no node", `{"Coord":{"Vec":[0,0,0,0,0,0,0,0]}}`, 400, "Must provide node"},
		{"no coordinate", `{"Node":"n1"}`, 400, "Must provide coordinate"},
		{"two dimensions", `{"Node":"n1","Coord":{"Vec":[0,0]}}`, 400, "incompatible coordinate"},
		{"long node name", `{"Node":"` + strings.Repeat("n", 1<<12) + `","Coord":{"Vec":[0,0,0,0,0,0,0,0]}}`, 413, "Node name too long (4096 > 1024 bytes)"},
		{"other datacenter", `{"Datacenter":"dc9","Node":"n1","Coord":{"Vec":[0,0,0,0,0,0,0,0]}}`, 500, ""},
		{"huge body", `{"Node":"n1","Segment":"` + strings.Repeat("s", 1<<21) + `"}`, 413, ""},
	}
	for _, c := range cases {
		hash := f.b.Store().Hash()
		r := f.do("PUT", "/v1/coordinate/update", []byte(c.body))
		if r.code != c.code || (c.text != "" && r.text() != c.text) {
			t.Errorf("%s: got %d %q, want %d %q", c.name, r.code, r.text(), c.code, c.text)
		}
		if f.b.Store().Hash() != hash {
			t.Errorf("%s changed the state", c.name)
		}
	}
	want(t, "GET update", f.do("GET", "/v1/coordinate/update", nil), 405, "method GET not allowed")

	compat := newFixture(t, withOptions(httpapi.Options{Compat: true}))
	want(t, "compat: two dimensions", compat.do("PUT", "/v1/coordinate/update", []byte(`{"Node":"n1","Coord":{"Vec":[0,0]}}`)),
		500, "incompatible coordinate")
}

// TestCoordinatesDisabled: disable_coordinates answers every endpoint 401.
func TestCoordinatesDisabled(t *testing.T) {
	f := newFixture(t, withOptions(httpapi.Options{DisableCoordinates: true}))
	for _, p := range []string{"/v1/coordinate/datacenters", "/v1/coordinate/nodes", "/v1/coordinate/node/node-a"} {
		want(t, p, f.do("GET", p, nil), 401, "Coordinate support disabled")
	}
	want(t, "update", f.do("PUT", "/v1/coordinate/update", []byte(`{"Node":"node-a","Coord":{"Vec":[0,0,0,0,0,0,0,0]}}`)),
		401, "Coordinate support disabled")
}

// TestCoordinateDatacenters: this datacenter with its servers.
func TestCoordinateDatacenters(t *testing.T) {
	f := newFixture(t)
	if _, err := f.client.Catalog().Register(&api.CatalogRegistration{Node: "node-a", Address: "127.0.0.1",
		Service: &api.AgentService{ID: "consul", Service: "consul", Port: 8300}}, nil); err != nil {
		t.Fatal(err)
	}
	f.coordinate("node-a", 0.004)
	dcs, err := f.client.Coordinate().Datacenters()
	if err != nil {
		t.Fatal(err)
	}
	if len(dcs) != 1 || dcs[0].Datacenter != "dc1" || dcs[0].AreaID != "wan" || len(dcs[0].Coordinates) != 1 ||
		dcs[0].Coordinates[0].Node != "node-a" || dcs[0].Coordinates[0].Coord.Vec[0] != 0.004 {
		t.Fatalf("datacenters: %+v", dcs)
	}
}

// TestNearSorting: ?near sorts catalog and health reads and a prepared
// query by distance, nearest first, nodes without a coordinate last in
// their usual order; a source without a coordinate sorts nothing (S89).
func TestNearSorting(t *testing.T) {
	f := newFixture(t)
	// node-a (the agent) at 0; far at 0.009; mid at 0.004; none has none.
	webCheck := &api.AgentCheck{CheckID: "web-c", Name: "web-c", ServiceID: "web", Status: "passing"}
	for _, n := range []string{"far", "mid", "none"} {
		if _, err := f.client.Catalog().Register(&api.CatalogRegistration{Node: n, Address: "127.0.0.1",
			Service: &api.AgentService{ID: "web", Service: "web"}, Check: webCheck}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.client.Catalog().Register(&api.CatalogRegistration{Node: "node-a", Address: "127.0.0.1",
		Service: &api.AgentService{ID: "web", Service: "web"}, Check: webCheck}, nil); err != nil {
		t.Fatal(err)
	}
	f.coordinate("node-a", 0)
	f.coordinate("far", 0.009)
	f.coordinate("mid", 0.004)

	nodes := func(path string) string {
		t.Helper()
		r := f.do("GET", path, nil)
		want(t, path, r, 200, "")
		var out []struct{ Node any }
		for _, e := range decode[[]map[string]any](t, r) {
			out = append(out, struct{ Node any }{e["Node"]})
		}
		var names []string
		for _, e := range out {
			switch n := e.Node.(type) {
			case string:
				names = append(names, n)
			case map[string]any:
				names = append(names, n["Node"].(string))
			}
		}
		return strings.Join(names, ",")
	}
	for _, c := range []struct{ path, want string }{
		{"/v1/catalog/nodes", "far,mid,node-a,none"},
		{"/v1/catalog/nodes?near=_agent", "node-a,mid,far,none"},
		{"/v1/catalog/nodes?near=far", "far,mid,node-a,none"},
		{"/v1/catalog/nodes?near=none", "far,mid,node-a,none"},
		{"/v1/catalog/service/web?near=_agent", "node-a,mid,far,none"},
		{"/v1/health/service/web?near=mid", "mid,node-a,far,none"},
		{"/v1/health/state/any?near=far", "far,mid,node-a,node-a,none"},
		{"/v1/health/checks/web?near=_agent", "node-a,mid,far,none"},
	} {
		if got := nodes(c.path); got != c.want {
			t.Errorf("%s: %s, want %s", c.path, got, c.want)
		}
	}

	// A prepared query's Near, and ?near over it.
	id, _, err := f.client.PreparedQuery().Create(&api.PreparedQueryDefinition{Name: "web",
		Service: api.ServiceQuery{Service: "web", Near: "_agent"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ near, want string }{{"", "node-a,mid,far,none"}, {"far", "far,mid,node-a,none"}} {
		res, _, err := f.client.PreparedQuery().Execute(id, &api.QueryOptions{Near: c.near})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range res.Nodes {
			names = append(names, e.Node.Node)
		}
		if got := strings.Join(names, ","); got != c.want {
			t.Errorf("execute near %q: %s, want %s", c.near, got, c.want)
		}
	}
}

// TestCoordinateACL: an update needs node:write on its node, a node's read
// node:read, and the list drops what the caller may not read, saying so.
func TestCoordinateACL(t *testing.T) {
	f := newACLFixture(t, "deny")
	for _, n := range []string{"n1", "n2"} {
		want(t, "register "+n, f.call("PUT", "/v1/catalog/register", mgmtSecret, fmt.Sprintf(`{"Node":%q,"Address":"127.0.0.1"}`, n)), 200, "true")
	}
	f.policy("n1w", `node "n1" { policy = "write" }`)
	f.policy("n1r", `node "n1" { policy = "read" }`)
	writer, _ := f.token("n1w")
	reader, _ := f.token("n1r")
	upd := func(node string) string {
		return fmt.Sprintf(`{"Node":%q,"Coord":{"Vec":[0,0,0,0,0,0,0,0],"Error":1.5}}`, node)
	}
	f.unchanged("a denied update", func() {
		r := f.call("PUT", "/v1/coordinate/update", reader, upd("n1"))
		if r.code != 403 {
			t.Fatalf("update with node:read: %d %q", r.code, r.text())
		}
	})
	want(t, "update with node:write", f.call("PUT", "/v1/coordinate/update", writer, upd("n1")), 200, "")
	want(t, "update of n2 (management)", f.call("PUT", "/v1/coordinate/update", mgmtSecret, upd("n2")), 200, "")

	r := f.call("GET", "/v1/coordinate/nodes", reader, nil)
	if r.code != 200 || r.header.Get("X-Consul-Results-Filtered-By-ACLs") != "true" {
		t.Fatalf("filtered list: %d %v", r.code, r.header)
	}
	if list := decode[[]map[string]any](t, r); len(list) != 1 || list[0]["Node"] != "n1" {
		t.Fatalf("filtered list: %s", r.text())
	}
	if r := f.call("GET", "/v1/coordinate/node/n2", reader, nil); r.code != 403 {
		t.Fatalf("node n2 with n1's read: %d %q", r.code, r.text())
	}
	want(t, "node n1 with n1's read", f.call("GET", "/v1/coordinate/node/n1", reader, nil), 200, "")
}
