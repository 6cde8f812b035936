package conformance

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-uuid"
)

// Catalog nodes: their ID, tagged addresses and meta, and what a node ID
// means for its name (S62); an agent's own node record (S63).

func nodeCases() []Case {
	return []Case{
		{clause: "S62", name: "register-replaces-node-info", run: s62ReplacesInfo},
		{clause: "S62", name: "node-id-rename-invalidates-old-node-sessions", run: s62Rename},
		{clause: "S62", name: "live-node-name-reserved-for-its-id", run: s62Reserved},
		{clause: "S62", name: "bad-node-id-refused", run: s62BadID},
		{clause: "S62", name: "agent-node-carries-its-node-id", run: s62AgentNode},
		{clause: "S62", name: "node-names-compare-ignoring-case", run: s62IgnoreCase},
		{clause: "S63", name: "agent-node-carries-its-meta-and-tagged-addresses", agents: true, run: s63AgentRecord},
	}
}

// catalogNodeInfo is the node part of GET /v1/catalog/node/<name>.
type catalogNodeInfo struct {
	ID                       string
	Node                     string
	Address                  string
	TaggedAddresses, Meta    map[string]string
	CreateIndex, ModifyIndex uint64
}

// nodeInfo reads a node's record, or nil if the catalog has no such node.
func (t *caseT) nodeInfo(node string) *catalogNodeInfo {
	r := t.Do(http.MethodGet, "/v1/catalog/node/"+url.PathEscape(node), nil)
	t.Require(r.Code == 200, "catalog node %s: want 200, got %s", node, r)
	var out struct{ Node *catalogNodeInfo }
	t.decode("catalog node", r, &out)
	return out.Node
}

// nodeID is a node ID unique to this run.
func (t *caseT) nodeID() string {
	id, err := uuid.GenerateUUID()
	t.Require(err == nil, "node ID: %v", err)
	return id
}

// freeNodeName is a node name unique to this run and case that the catalog
// does not have, cleaned up after the case.
func (t *caseT) freeNodeName(name string) string {
	node := t.RegisterNode(name)
	t.DeregisterNode(node)
	return node
}

// A register stores the node's ID, tagged addresses and meta; ?node-meta
// finds the node by them; a register that repeats them writes nothing, and
// one that leaves them out clears them.
func s62ReplacesInfo(t *caseT) {
	n := t.RegisterNode("n")
	id := t.nodeID()
	reg := map[string]any{"Node": n, "ID": id, "Address": "127.0.0.1",
		"TaggedAddresses": map[string]string{"lan": "127.0.0.1"}, "NodeMeta": map[string]string{"rack": t.ServiceName("r1")}}
	t.catalog("register", reg)
	info := t.nodeInfo(n)
	t.Require(info != nil, "node %s missing after its register", n)
	t.Equal("node ID", info.ID, id)
	t.Equal("tagged addresses", info.TaggedAddresses, map[string]string{"lan": "127.0.0.1"})
	t.Equal("node meta", info.Meta, map[string]string{"rack": t.ServiceName("r1")})

	var listed []struct{ Node string }
	t.decode("nodes by meta", t.Do(http.MethodGet, "/v1/catalog/nodes?node-meta=rack:"+url.QueryEscape(t.ServiceName("r1")), nil), &listed)
	t.Equal("nodes with the meta", listed, []struct{ Node string }{{n}})
	listed = nil
	t.decode("nodes by other meta", t.Do(http.MethodGet, "/v1/catalog/nodes?node-meta=rack:"+url.QueryEscape(t.ServiceName("r2")), nil), &listed)
	t.Equal("nodes with another meta value", len(listed), 0)

	t.catalog("register", reg)
	t.Equal("ModifyIndex after the same register", t.nodeInfo(n).ModifyIndex, info.ModifyIndex)

	t.catalog("register", map[string]any{"Node": n, "ID": id, "Address": "127.0.0.1"})
	after := t.nodeInfo(n)
	t.Check(after.ModifyIndex > info.ModifyIndex, "a register without meta did not write the node: ModifyIndex %d", after.ModifyIndex)
	t.Equal("node meta after a register without it", after.Meta, map[string]string(nil))
	t.Equal("tagged addresses after a register without them", after.TaggedAddresses, map[string]string(nil))
	t.Equal("CreateIndex across the rewrite", after.CreateIndex, info.CreateIndex)
}

// A register with a node's ID under another name renames it: the old node
// goes with its checks, so its sessions are invalidated and their locks
// released; the new name keeps the old node's CreateIndex.
func s62Rename(t *caseT) {
	from := t.RegisterNode("from", checkSpec{"alive", "passing"})
	id := t.nodeID()
	t.catalog("register", map[string]any{"Node": from, "ID": id, "Address": "127.0.0.1"})
	before := t.nodeInfo(from)
	k := t.Key("k")
	sess := t.holding(from, []string{"alive"}, nil, k)
	held := t.MustGet(k)

	to := t.freeNodeName("to")
	t.catalog("register", map[string]any{"Node": to, "ID": id, "Address": "127.0.0.2"})
	t.Check(t.nodeInfo(from) == nil, "renamed node %s is still in the catalog", from)
	renamed := t.nodeInfo(to)
	if t.Check(renamed != nil, "node %s missing after the rename", to) {
		t.Equal("ID after the rename", renamed.ID, id)
		t.Equal("CreateIndex after the rename", renamed.CreateIndex, before.CreateIndex)
	}
	t.Check(!t.Alive(sess), "session on the renamed node survived")
	t.expectReleased("node renamed", k, held)
}

// A node whose agent is alive (it has an ID and a serfHealth that is not
// critical) keeps its name: a register of that name, in any case, with
// another ID is refused and changes nothing. Once serfHealth is critical
// the name can be taken.
func s62Reserved(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"serfHealth", "passing"})
	id, other := t.nodeID(), t.nodeID()
	t.catalog("register", map[string]any{"Node": n, "ID": id, "Address": "127.0.0.1"})
	for _, name := range []string{n, strings.ToUpper(n)} {
		r := t.DoJSON(http.MethodPut, "/v1/catalog/register", map[string]any{"Node": name, "ID": other, "Address": "127.0.0.1"})
		t.Check(r.Code >= 400 && strings.Contains(r.Text(), "is reserved by node "+id),
			"register of %s with another ID: want a refusal naming node %s, got %s", name, id, r)
	}
	t.Equal("ID after the refused registers", t.nodeInfo(n).ID, id)

	t.SetCheck(n, "serfHealth", "critical")
	t.catalog("register", map[string]any{"Node": n, "ID": other, "Address": "127.0.0.1"})
	t.Equal("ID once serfHealth is critical", t.nodeInfo(n).ID, other)
}

// A node ID that is not a UUID is refused, and nothing is written.
func s62BadID(t *caseT) {
	n := t.freeNodeName("n")
	for _, id := range []string{"xyz", "11111111-1111-1111-1111-11111111111z", "111111111111-1111-1111-1111-11111111"} {
		r := t.DoJSON(http.MethodPut, "/v1/catalog/register", map[string]any{"Node": n, "ID": id, "Address": "127.0.0.1"})
		t.Check(r.Code >= 400 && strings.HasPrefix(r.Text(), "Bad node ID: "), "register with node ID %q: want Bad node ID, got %s", id, r)
	}
	t.Check(t.nodeInfo(n) == nil, "a refused register wrote node %s", n)
}

// The agent under test has a node ID, advertises it in its gossip "id" tag,
// and its catalog node carries it, with the agent's version as meta.
func s62AgentNode(t *caseT) {
	r := t.Do(http.MethodGet, "/v1/agent/self", nil)
	t.Require(r.Code == 200, "agent self: want 200, got %s", r)
	var self struct {
		Config struct{ NodeName, NodeID string }
	}
	t.decode("agent self", r, &self)
	node, id := self.Config.NodeName, self.Config.NodeID
	_, err := uuid.ParseUUID(id)
	t.Require(err == nil, "agent self NodeID %q is not a UUID: %v", id, err)

	var members []struct {
		Name string
		Tags map[string]string
	}
	t.decode("agent members", t.Do(http.MethodGet, "/v1/agent/members", nil), &members)
	for _, m := range members {
		if m.Name == node {
			t.Equal("member "+node+" id tag", m.Tags["id"], id)
		}
	}
	info := t.nodeInfo(node)
	if t.Check(info != nil, "agent node %s is not in the catalog", node) {
		t.Equal("catalog node ID of the agent", info.ID, id)
		t.Check(info.Meta["consul-version"] != "", "agent node %s has no consul-version meta: %v", node, info.Meta)
	}
}

// Node names compare ignoring case: a session created on, a check written
// to, and a read of a node under another spelling all mean the same node.
func s62IgnoreCase(t *caseT) {
	n := t.RegisterNode("Caps", checkSpec{"alive", "passing"})
	lower, upper := strings.ToLower(n), strings.ToUpper(n)
	sess := t.CreateSession(map[string]any{"Node": lower, "NodeChecks": []string{"alive"}})
	info := t.nodeInfo(upper)
	if t.Check(info != nil, "node %s not found as %s", n, upper) {
		t.Equal("node name read as "+upper, info.Node, n)
	}
	t.Check(t.NodeChecks(upper)["alive"] != nil, "node %s's check not found as %s", n, upper)
	t.SetCheck(lower, "alive", "critical")
	t.Check(!t.Alive(sess), "session bound to %s's check survived it going critical as %s", n, lower)
}

// agentRecordWait bounds how long an agent may take to write its node
// record once the leader has registered its node: its first sync runs
// when it finds a server (Consul staggers it by up to 3 s).
const agentRecordWait = 30 * time.Second

// An agent started with -node-meta writes its node record: the operator's
// meta beside consul-network-segment ("") and consul-version, its address
// tagged lan and wan and again by address family, and the same meta in
// its /v1/agent/self.
func s63AgentRecord(t *caseT) {
	a := t.StartAgent("meta", "-node-meta", "rack:r1", "-node-meta", "note:a:b")
	var info *catalogNodeInfo
	deadline := time.Now().Add(agentRecordWait)
	for {
		info = t.nodeInfo(a.Node)
		if info != nil && info.Meta["rack"] == "r1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s's node has no rack meta after %v: %+v", a.Node, agentRecordWait, info)
		}
		t.Sleep(200 * time.Millisecond)
	}
	version := info.Meta["consul-version"]
	t.Check(version != "", "agent node %s has no consul-version meta: %v", a.Node, info.Meta)
	t.Equal("agent node meta", info.Meta, map[string]string{"rack": "r1", "note": "a:b",
		"consul-network-segment": "", "consul-version": version})
	addr := info.Address
	t.Equal("agent node tagged addresses", info.TaggedAddresses,
		map[string]string{"lan": addr, "lan_ipv4": addr, "wan": addr, "wan_ipv4": addr})

	var self struct{ Meta map[string]string }
	r := a.Do(http.MethodGet, "/v1/agent/self")
	t.Require(r.Code == 200, "agent %s self: want 200, got %s", a.Node, r)
	t.decode("agent self", r, &self)
	t.Equal("agent self Meta", self.Meta, info.Meta)
}
