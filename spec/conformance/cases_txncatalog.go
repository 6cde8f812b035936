package conformance

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/consul/api"
)

// Catalog and session ops in a txn: S68, S69.

func txnCatalogCases() []Case {
	return []Case{
		{clause: "S68", name: "set-and-get-node-service-check", run: s68SetGet},
		{clause: "S68", name: "cas-compares-modifyindex", run: s68CAS},
		{clause: "S68", name: "missing-records-fail-with-consul-texts", run: s68Missing},
		{clause: "S68", name: "critical-check-invalidates-at-txn-index", run: s68Critical},
		{clause: "S68", name: "node-delete-invalidates-its-sessions", run: s68NodeDelete},
		{clause: "S68", name: "failing-catalog-op-aborts-all", run: s68Atomic},
		{clause: "S68", name: "pre-check-failures-reported-alone", run: s68PreCheck},
		{clause: "S69", name: "session-delete-invalidates", run: s69SessionDelete},
	}
}

// txnResult is one result of a txn answer, in consul/api's shapes.
type txnResult struct {
	KV      *api.KVPair
	Node    *api.Node
	Service *api.AgentService
	Check   *api.HealthCheck
}

// txnOpsAnswer is the decoded body of a txn answer (200 or 409).
type txnOpsAnswer struct {
	Results []txnResult
	Errors  []txnError
}

// TxnOps sends ops as they are ({"KV":…}, {"Node":…}, …) and decodes the
// body of a 200 or 409 answer.
func (t *caseT) TxnOps(ops ...map[string]any) (*resp, txnOpsAnswer) {
	r := t.DoJSON(http.MethodPut, "/v1/txn", ops)
	var a txnOpsAnswer
	if r.Code == 200 || r.Code == 409 {
		t.decode("txn", r, &a)
	}
	return r, a
}

func nodeOp(verb string, node map[string]any) map[string]any {
	return map[string]any{"Node": map[string]any{"Verb": verb, "Node": node}}
}

func serviceOp(verb, node string, service map[string]any) map[string]any {
	return map[string]any{"Service": map[string]any{"Verb": verb, "Node": node, "Service": service}}
}

func checkOp(verb string, check map[string]any) map[string]any {
	return map[string]any{"Check": map[string]any{"Verb": verb, "Check": check}}
}

func kvOp(verb, key, value string) map[string]any {
	op := map[string]any{"Verb": verb, "Key": key}
	if value != "" {
		op["Value"] = []byte(value)
	}
	return map[string]any{"KV": op}
}

// txnOpsFail checks a 409 naming exactly the given failures (op index to
// What) and no results.
func (t *caseT) txnOpsFail(what string, want map[int]string, ops ...map[string]any) {
	r, a := t.TxnOps(ops...)
	if !t.Check(r.Code == 409, "%s: want 409, got %s", what, r) {
		return
	}
	t.Check(a.Results == nil, "%s: failed txn returned results %+v", what, a.Results)
	got := map[int]string{}
	for _, e := range a.Errors {
		got[e.OpIndex] = e.What
	}
	t.Equal(what+": errors", got, want)
}

// catalogTxnNode is a node name free in the catalog, deregistered after
// the case whatever the case leaves.
func (t *caseT) catalogTxnNode(name string) string { return t.freeNodeName(name) }

// A txn writes a node, a service and a check with a key at one index, and
// reads them back with Consul's result shapes.
func s68SetGet(t *caseT) {
	n, svc, k := t.catalogTxnNode("n"), t.ServiceName("web"), t.Key("k")
	r, a := t.TxnOps(
		nodeOp("set", map[string]any{"Node": n, "Address": "127.0.0.2",
			"TaggedAddresses": map[string]string{"wlan": "127.0.0.2"}, "Meta": map[string]string{"rack": "r1"}}),
		serviceOp("set", n, map[string]any{"ID": svc, "Service": svc, "Port": 8080, "Tags": []string{"a"}}),
		checkOp("set", map[string]any{"Node": n, "CheckID": "alive", "Name": "alive", "ServiceID": svc, "Status": "passing"}),
		kvOp("set", k, "v"))
	t.Require(r.Code == 200 && len(a.Results) == 4, "txn writing a node, service, check and key: want 200 with 4 results, got %s", r)
	node, sv, ch, kv := a.Results[0].Node, a.Results[1].Service, a.Results[2].Check, a.Results[3].KV
	t.Require(node != nil && sv != nil && ch != nil && kv != nil, "results not in op order: %+v", a.Results)
	t.Equal("node", [3]any{node.Node, node.Address, node.Meta["rack"]}, [3]any{n, "127.0.0.2", "r1"})
	t.Equal("node tagged addresses", node.TaggedAddresses, map[string]string{"wlan": "127.0.0.2"})
	t.Equal("service", [3]any{sv.ID, sv.Service, sv.Port}, [3]any{svc, svc, 8080})
	t.Equal("check", [4]any{ch.Node, ch.CheckID, ch.Status, ch.ServiceName}, [4]any{n, "alive", "passing", svc})
	t.Equal("check's service tags", ch.ServiceTags, []string{"a"})
	idx := kv.ModifyIndex
	t.Equal("indexes of the txn's writes", [4]uint64{node.CreateIndex, sv.CreateIndex, ch.CreateIndex, kv.CreateIndex}, [4]uint64{idx, idx, idx, idx})

	r, a = t.TxnOps(nodeOp("get", map[string]any{"Node": n}),
		serviceOp("get", n, map[string]any{"ID": svc}),
		checkOp("get", map[string]any{"Node": n, "CheckID": "alive"}))
	t.Require(r.Code == 200 && len(a.Results) == 3, "read-only txn: want 200 with 3 results, got %s", r)
	t.Check(a.Results[0].Node != nil && a.Results[0].Node.ModifyIndex == idx, "node get: %+v", a.Results[0].Node)
	t.Check(a.Results[1].Service != nil && a.Results[1].Service.ModifyIndex == idx, "service get: %+v", a.Results[1].Service)
	t.Check(a.Results[2].Check != nil && a.Results[2].Check.ModifyIndex == idx, "check get: %+v", a.Results[2].Check)
	checks := t.NodeChecks(n)
	t.Check(checks["alive"] != nil && checks["alive"].Status == "passing", "health of %s after the txn: %+v", n, checks)
}

// cas and delete-cas write only at the record's ModifyIndex; delete removes.
func s68CAS(t *caseT) {
	n, svc := t.catalogTxnNode("n"), t.ServiceName("web")
	r, a := t.TxnOps(nodeOp("set", map[string]any{"Node": n, "Address": "127.0.0.2"}),
		serviceOp("set", n, map[string]any{"ID": svc, "Service": svc}),
		checkOp("set", map[string]any{"Node": n, "CheckID": "c", "Status": "passing"}))
	t.Require(r.Code == 200 && len(a.Results) == 3, "setup txn: %s", r)
	idx := a.Results[0].Node.ModifyIndex
	t.txnOpsFail("node cas at a stale index", map[int]string{0: fmt.Sprintf("failed to set node %q, index is stale", n)},
		nodeOp("cas", map[string]any{"Node": n, "Address": "127.0.0.3", "ModifyIndex": idx + 1000}))
	t.txnOpsFail("service delete-cas at a stale index", map[int]string{0: fmt.Sprintf("failed to delete service %q on node %q, index is stale", svc, n)},
		serviceOp("delete-cas", n, map[string]any{"ID": svc, "Service": svc, "ModifyIndex": idx + 1000}))
	r, a = t.TxnOps(nodeOp("cas", map[string]any{"Node": n, "Address": "127.0.0.3", "ModifyIndex": idx}),
		checkOp("delete-cas", map[string]any{"Node": n, "CheckID": "c", "ModifyIndex": idx}))
	t.Require(r.Code == 200 && len(a.Results) == 1 && a.Results[0].Node != nil, "cas at the node's index: want 200 with the node, got %s", r)
	t.Check(a.Results[0].Node.Address == "127.0.0.3" && a.Results[0].Node.ModifyIndex > idx, "node after cas: %+v", a.Results[0].Node)
	t.Check(t.NodeChecks(n)["c"] == nil, "check c still on %s after its delete-cas", n)
	r, _ = t.TxnOps(nodeOp("delete", map[string]any{"Node": n}))
	t.Check(r.Code == 200, "node delete: %s", r)
	t.Check(!t.nodeExists(n), "node %s still in the catalog after its delete", n)
}

// A get of a missing record fails its op with Consul's text.
func s68Missing(t *caseT) {
	n := t.RegisterNode("n")
	ghost := t.catalogTxnNode("ghost")
	t.txnOpsFail("gets of missing records", map[int]string{
		0: fmt.Sprintf("node %q doesn't exist", ghost),
		1: fmt.Sprintf("service %q on node %q doesn't exist", "nope", n),
		2: fmt.Sprintf("check %q on node %q doesn't exist", "nope", n),
		3: "Missing node registration",
	},
		nodeOp("get", map[string]any{"Node": ghost}),
		serviceOp("get", n, map[string]any{"ID": "nope"}),
		checkOp("get", map[string]any{"Node": n, "CheckID": "nope"}),
		serviceOp("set", ghost, map[string]any{"Service": "web"}))
}

// A check set critical in a txn invalidates the sessions bound to it in the
// txn's write: their keys are released at the index of the txn's own key.
func s68Critical(t *caseT) {
	n := t.RegisterNode("n", checkSpec{ID: "alive", Status: "passing"})
	sid := t.CreateSessionOn(n, []string{"alive"}, nil)
	k, k2 := t.Key("held"), t.Key("written")
	t.Require(t.Acquire(k, sid, "v"), "acquire of %s failed", k)
	r, a := t.TxnOps(checkOp("set", map[string]any{"Node": n, "CheckID": "alive", "Name": "alive", "Status": "critical"}),
		kvOp("set", k2, "x"))
	t.Require(r.Code == 200 && len(a.Results) == 2 && a.Results[1].KV != nil, "txn setting the check critical: %s", r)
	t.Check(t.SessionInfo(sid) == nil, "session %s bound to a check the txn made critical still exists", sid)
	p := t.MustGet(k)
	t.Check(p.Session == "", "%s still held by %s after its session's check went critical", k, p.Session)
	t.Equal("index of the release", p.ModifyIndex, a.Results[1].KV.ModifyIndex)
}

// A node delete in a txn invalidates every session on the node.
func s68NodeDelete(t *caseT) {
	n := t.RegisterNode("n")
	sid := t.CreateSessionOn(n, nil, nil)
	k := t.Key("held")
	t.Require(t.Acquire(k, sid, "v"), "acquire of %s failed", k)
	r, _ := t.TxnOps(nodeOp("delete", map[string]any{"Node": n}))
	t.Require(r.Code == 200, "txn deleting the node: %s", r)
	t.Check(t.SessionInfo(sid) == nil, "session %s on a node the txn deleted still exists", sid)
	t.Check(t.MustGet(k).Session == "", "%s still held after its session's node was deleted", k)
}

// A txn whose catalog op fails changes nothing: not the critical check
// before it, nor the sessions that check would end, nor its keys.
func s68Atomic(t *caseT) {
	n := t.RegisterNode("n", checkSpec{ID: "alive", Status: "passing"})
	ghost := t.catalogTxnNode("ghost")
	sid := t.CreateSessionOn(n, []string{"alive"}, nil)
	k, k2 := t.Key("held"), t.Key("written")
	t.Require(t.Acquire(k, sid, "v"), "acquire of %s failed", k)
	before := t.MustGet(k)
	t.txnOpsFail("txn with a service on a missing node", map[int]string{2: "Missing node registration"},
		checkOp("set", map[string]any{"Node": n, "CheckID": "alive", "Name": "alive", "Status": "critical"}),
		kvOp("set", k2, "x"),
		serviceOp("set", ghost, map[string]any{"Service": "web"}))
	t.Check(t.SessionInfo(sid) != nil, "aborted txn invalidated session %s", sid)
	t.Unchanged("aborted txn", k, before)
	p, _ := t.Get(k2)
	t.Check(p == nil, "aborted txn wrote %s", k2)
	t.Equal("check status after the aborted txn", t.NodeChecks(n)["alive"].Status, "passing")
	t.Check(!t.nodeExists(ghost), "aborted txn registered %s", ghost)
}

// Ops are vetted before any runs: a bad verb fails alone, the other ops'
// failures not even reported.
func s68PreCheck(t *caseT) {
	n := t.RegisterNode("n")
	t.txnOpsFail("txn with an unknown node verb", map[int]string{1: "unknown node operation: frobnicate"},
		kvOp("get", t.Key("missing"), ""),
		nodeOp("frobnicate", map[string]any{"Node": n}))
}

// A session delete in a txn ends the session as a destroy does, and fails
// for a session that does not exist.
func s69SessionDelete(t *caseT) {
	sid := t.CreateUnboundSession(nil)
	k, k2 := t.Key("held"), t.Key("written")
	t.Require(t.Acquire(k, sid, "v"), "acquire of %s failed", k)
	end := map[string]any{"Session": map[string]any{"Verb": "delete", "Session": map[string]any{"ID": sid}}}
	r, a := t.TxnOps(map[string]any{"KV": map[string]any{"Verb": "check-session", "Key": k, "Session": sid}}, end, kvOp("set", k2, "x"))
	t.Require(r.Code == 200 && len(a.Results) == 2, "txn ending its session: %s", r)
	t.Check(t.SessionInfo(sid) == nil, "session %s outlived its delete", sid)
	p := t.MustGet(k)
	t.Check(p.Session == "" && p.ModifyIndex == a.Results[1].KV.ModifyIndex, "%s after the txn deleted its holder: %+v", k, p)
	t.txnOpsFail("delete of a gone session", map[int]string{0: fmt.Sprintf("failed to delete session: session %q doesn't exist", sid)}, end)
}
