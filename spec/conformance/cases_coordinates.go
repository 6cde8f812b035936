package conformance

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Network coordinates (S89): the coordinate endpoints and ?near sorting.
// A coordinate is stored by the leader's next batch (5 s in Consul and
// tenure), so the cases wait for what they wrote to appear.

func coordinateCases() []Case {
	return []Case{
		{clause: "S89", name: "update-read-back-deregister-drops", run: s89ReadBack},
		{clause: "S89", name: "unknown-node-dropped-bad-update-refused", run: s89Refusals},
		{clause: "S89", name: "near-sorts-by-distance", run: s89Near},
		{clause: "S89", name: "query-near-ip-sorts-from-the-callers-node", run: s89NearIP},
		{clause: "S89", name: "node-read-blocks-while-it-has-none", run: s89NodeBlocks},
		{clause: "S89", name: "update-needs-node-write-reads-node-read", acl: true, run: s89ACL},
	}
}

// coordBatchWait bounds the wait for a leader's batch: Consul's period is
// 5 s; a loaded machine may take a few more.
const coordBatchWait = 30 * time.Second

// coordBody is an update of node to an 8-dimensional coordinate whose
// first component is x.
func coordBody(node string, x float64) []byte {
	return fmt.Appendf(nil, `{"Node":%q,"Coord":{"Vec":[%v,0,0,0,0,0,0,0],"Error":1.5,"Adjustment":0,"Height":0.00001}}`, node, x)
}

// nodeCoordX reads a node's coordinate: its first component, and whether
// the node has one.
func (t *caseT) nodeCoordX(token, node string) (float64, bool) {
	r := t.DoAs(token, http.MethodGet, "/v1/coordinate/node/"+url.PathEscape(node), nil)
	if r.Code == 404 {
		return 0, false
	}
	t.Require(r.Code == 200, "coordinate of %s: want 200 or 404, got %s", node, r)
	var out []struct {
		Node  string
		Coord struct{ Vec []float64 }
	}
	t.decode("node coordinate", r, &out)
	t.Require(len(out) == 1 && len(out[0].Coord.Vec) == 8, "coordinate of %s: %s", node, r)
	return out[0].Coord.Vec[0], true
}

// waitCoord waits until node's coordinate reads x.
func (t *caseT) waitCoord(token, node string, x float64) {
	t.WaitFor("the coordinate of "+node, coordBatchWait, 250*time.Millisecond, func() bool {
		got, ok := t.nodeCoordX(token, node)
		return ok && got == x
	})
}

// An update answers 200 with no body; the leader's batch stores it, the
// node read and the list show it, and deregistering the node drops it.
func s89ReadBack(t *caseT) {
	n := t.RegisterNode("coord")
	r := t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(n, 0.0015))
	t.expect("update", r, 200, "")
	t.Equal("update body", r.Text(), "")
	t.waitCoord("", n, 0.0015)

	var list []struct{ Node, Segment string }
	lr := t.Do(http.MethodGet, "/v1/coordinate/nodes", nil)
	t.Require(lr.Code == 200 && lr.Header.Get("X-Consul-Index") != "", "coordinate nodes: %s", lr)
	t.decode("coordinate nodes", lr, &list)
	t.Check(slices.ContainsFunc(list, func(c struct{ Node, Segment string }) bool { return c.Node == n && c.Segment == "" }),
		"coordinate list lacks %s: %s", n, lr)
	t.Check(slices.IsSortedFunc(list, func(a, b struct{ Node, Segment string }) int { return strings.Compare(a.Node, b.Node) }),
		"coordinate list not sorted by node: %s", lr)

	t.DeregisterNode(n)
	_, ok := t.nodeCoordX("", n)
	t.Check(!ok, "the coordinate of deregistered node %s is still there", n)
}

// An update for a node the catalog lacks is accepted and never stored; one
// of the wrong dimension, or that is not JSON, is refused.
func s89Refusals(t *caseT) {
	known := t.RegisterNode("known")
	ghost := t.freeNodeName("ghost")
	t.expect("update of an unknown node", t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(ghost, 0.002)), 200, "")
	t.expect("update of a known node", t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(known, 0.002)), 200, "")
	t.waitCoord("", known, 0.002) // the batch that carried both has applied
	_, ok := t.nodeCoordX("", ghost)
	t.Check(!ok, "a coordinate was stored for %s, which the catalog does not have", ghost)

	t.refused("two dimensions", t.Do(http.MethodPut, "/v1/coordinate/update",
		fmt.Appendf(nil, `{"Node":%q,"Coord":{"Vec":[0,0],"Error":1.5}}`, known)), "incompatible coordinate")
	bad := t.Do(http.MethodPut, "/v1/coordinate/update", []byte(`{"Node":`))
	t.Check(bad.Code == 400 && strings.HasPrefix(bad.Text(), "Request decode failed: "), "bad JSON: %s", bad)
	t.expect("GET update", t.Do(http.MethodGet, "/v1/coordinate/update", nil), 405, "method GET not allowed")
	x, _ := t.nodeCoordX("", known)
	t.Equal("coordinate after the refusals", x, 0.002)
}

// ?near sorts catalog, health and check reads nearest first, nodes without a
// coordinate last in name order; a source without a coordinate sorts
// nothing.
func s89Near(t *caseT) {
	svc := t.ServiceName("near")
	var nodes []string
	for _, name := range []string{"a", "b", "c", "d"} {
		n := t.RegisterNode(name, checkSpec{"alive", "passing"})
		t.catalog("register", map[string]any{"Node": n, "Address": "127.0.0.1",
			"Service": map[string]any{"ID": svc, "Service": svc}})
		nodes = append(nodes, n)
	}
	a, b, c, d := nodes[0], nodes[1], nodes[2], nodes[3]
	for i, x := range []float64{0, 0.004, 0.009} {
		t.expect("update", t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(nodes[i], x)), 200, "")
	}
	for i, x := range []float64{0, 0.004, 0.009} {
		t.waitCoord("", nodes[i], x)
	}
	order := func(path string) []string {
		r := t.Do(http.MethodGet, path, nil)
		t.Require(r.Code == 200, "%s: %s", path, r)
		var raw []map[string]any
		t.decode(path, r, &raw)
		var out []string
		for _, e := range raw {
			name, _ := e["Node"].(string)
			if m, ok := e["Node"].(map[string]any); ok {
				name, _ = m["Node"].(string)
			}
			if slices.Contains(nodes, name) {
				out = append(out, name)
			}
		}
		return out
	}
	for _, q := range []struct {
		path string
		want []string
	}{
		{"/v1/catalog/nodes?near=" + url.QueryEscape(a), []string{a, b, c, d}},
		{"/v1/catalog/nodes?near=" + url.QueryEscape(c), []string{c, b, a, d}},
		{"/v1/catalog/nodes?near=" + url.QueryEscape(d), []string{a, b, c, d}},
		{"/v1/catalog/service/" + url.PathEscape(svc) + "?near=" + url.QueryEscape(c), []string{c, b, a, d}},
		{"/v1/health/service/" + url.PathEscape(svc) + "?near=" + url.QueryEscape(b), []string{b, a, c, d}},
		{"/v1/health/state/passing?near=" + url.QueryEscape(c), []string{c, b, a, d}},
	} {
		t.Equal(q.path, order(q.path), q.want)
	}
}

// A prepared query's "_ip" (as its Near or as ?near on execute) sorts from
// the node whose address is the caller's IP, the first X-Forwarded-For
// entry when there is one, and puts that node first; with no such node it
// sorts nothing. A catalog read's ?near=_ip names no node and sorts
// nothing.
func s89NearIP(t *caseT) {
	svc := t.ServiceName("nearip")
	addrs := []string{"192.0.2.71", "192.0.2.72", "192.0.2.73"}
	var nodes []string
	for i, name := range []string{"a", "b", "c"} {
		n := t.RegisterNode(name, checkSpec{"alive", "passing"})
		t.catalog("register", map[string]any{"Node": n, "Address": addrs[i],
			"Service": map[string]any{"ID": svc, "Service": svc}})
		nodes = append(nodes, n)
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	for i, x := range []float64{0, 0.004, 0.009} {
		t.expect("update", t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(nodes[i], x)), 200, "")
	}
	for i, x := range []float64{0, 0.004, 0.009} {
		t.waitCoord("", nodes[i], x)
	}
	r := t.CreateQueryRaw(map[string]any{"Name": t.ServiceName("nearip-q"), "Service": map[string]any{"Service": svc, "Near": "_ip"}})
	t.Require(r.Code == 200, "create query: %s", r)
	var created struct{ ID string }
	t.decode("create query", r, &created)
	order := func(path, from string) []string {
		r := t.DoHeaders(http.Header{"X-Forwarded-For": {from + ", 198.51.100.1"}}, http.MethodGet, path, nil)
		t.Require(r.Code == 200, "%s from %s: %s", path, from, r)
		var out struct {
			Nodes []struct{ Node struct{ Node string } }
		}
		var list []struct{ Node string }
		if strings.HasPrefix(path, "/v1/query/") {
			t.decode(path, r, &out)
		} else {
			t.decode(path, r, &list)
			for _, n := range list {
				out.Nodes = append(out.Nodes, struct{ Node struct{ Node string } }{struct{ Node string }{n.Node}})
			}
		}
		var names []string
		for _, n := range out.Nodes {
			if slices.Contains(nodes, n.Node.Node) {
				names = append(names, n.Node.Node)
			}
		}
		return names
	}
	exec := "/v1/query/" + created.ID + "/execute"
	t.Equal("execute from c's address", order(exec, addrs[2]), []string{c, b, a})
	t.Equal("execute from b's address", order(exec, addrs[1]), []string{b, a, c})
	t.Equal("execute with ?near=_ip from c's address", order(exec+"?near=_ip", addrs[2]), []string{c, b, a})
	if got := order(exec, "203.0.113.9"); len(got) == 3 {
		// No node has the caller's address: nothing is sorted, so the
		// shuffle decides; only the set is checked.
		slices.Sort(got)
		want := []string{a, b, c}
		slices.Sort(want)
		t.Equal("execute from an address no node has", got, want)
	} else {
		t.Errorf("execute from an address no node has: got %v, want all three nodes", got)
	}
	t.Equal("catalog nodes with ?near=_ip", order("/v1/catalog/nodes?near=_ip", addrs[2]), []string{a, b, c})
}

// A node's coordinate read blocks on ?index like the list, also while the
// node has none: it answers when the coordinates move or the wait ends,
// with a bare 404 and the index until the node has one, then 200.
func s89NodeBlocks(t *caseT) {
	n := t.RegisterNode("block")
	path := "/v1/coordinate/node/" + url.PathEscape(n)
	listIndex := func() uint64 {
		r := t.Do(http.MethodGet, "/v1/coordinate/nodes", nil)
		t.Require(r.Code == 200, "coordinate nodes: %s", r)
		return r.Index()
	}
	for try := 0; ; try++ {
		idx := listIndex()
		res := t.blockingGet(path, idx, "1s")()
		// With the index headers, as Consul sends them to a client that
		// accepts gzip (this one, like consul/api).
		t.Require(res.r.Code == 404 && len(res.r.Body) == 0 && res.r.Index() >= idx && res.r.Header.Get("Content-Type") == "",
			"blocked read of a node without coordinates: got %s (index %d, type %q), want a bare 404 at index %d or above",
			res.r, res.r.Index(), res.r.Header.Get("Content-Type"), idx)
		if res.took >= 900*time.Millisecond {
			break
		}
		// Another node's update ends the wait early; a server that does
		// not block answers at once with nothing moved.
		t.Require(listIndex() > idx, "read of a node without coordinates at ?index=%d&wait=1s answered after %v with no coordinate moved", idx, res.took)
		t.Require(try < 20, "the coordinates kept moving: no wait of a second ran out")
	}
	idx := listIndex()
	woken := t.blockingGet(path, idx, "10s")
	t.Sleep(300 * time.Millisecond)
	t.expect("update", t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(n, 0.002)), 200, "")
	for res := woken(); res.r.Code != 200; res = t.blockingGet(path, idx, "10s")() {
		t.Require(res.r.Code == 404 && res.took < 9*time.Second, "blocked read before the node's update: %s after %v", res.r, res.took)
		idx = listIndex()
	}
}

// With ACLs: an update needs node:write on its node (403 and nothing
// stored without), a node's read node:read, and the list shows only the
// nodes the caller may read.
func s89ACL(t *caseT) {
	n := t.RegisterNode("acl")
	other := t.RegisterNode("other")
	reader, accessor := t.CreateToken(t.policyName("read", `node "`+n+`" { policy = "read" }`))
	writer, _ := t.CreateToken(t.policyName("write", `node "`+n+`" { policy = "write" }`))
	t.expect("update with node:read", t.DoAs(reader, http.MethodPut, "/v1/coordinate/update", coordBody(n, 0.003)), 403,
		fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'node:write' on %q", accessor, n))
	t.expect("update with node:write", t.DoAs(writer, http.MethodPut, "/v1/coordinate/update", coordBody(n, 0.001)), 200, "")
	t.expect("update of the other node (management)", t.Do(http.MethodPut, "/v1/coordinate/update", coordBody(other, 0.001)), 200, "")
	t.waitCoord(reader, n, 0.001)
	t.waitCoord(t.env.token, other, 0.001)

	r := t.DoAs(reader, http.MethodGet, "/v1/coordinate/nodes", nil)
	t.Require(r.Code == 200, "coordinate nodes: %s", r)
	var list []struct{ Node string }
	t.decode("coordinate nodes", r, &list)
	t.Equal("nodes the reader sees", list, []struct{ Node string }{{n}})
	t.Equal("filtered header", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "true")
	t.expect("node read without node:read", t.DoAs(reader, http.MethodGet, "/v1/coordinate/node/"+url.PathEscape(other), nil), 403,
		fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'node:read' on %q", accessor, other))
}
