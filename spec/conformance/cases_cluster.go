package conformance

import (
	"net/http"
	"net/url"
	"strings"
)

// Cluster-level behaviour: datacenters (S81), raft server IDs (S82).

func clusterCases() []Case {
	return []Case{
		{clause: "S81", name: "unknown-dc-500-changes-nothing", run: s81UnknownDC},
		{clause: "S82", name: "raft-server-id-is-node-id", run: s82RaftIDs},
	}
}

// ownDatacenter is the serving agent's datacenter, as /v1/agent/self names it.
func (t *caseT) ownDatacenter() string {
	r := t.Do(http.MethodGet, "/v1/agent/self", nil)
	t.Require(r.Code == 200, "agent self: want 200, got %s", r)
	var self struct{ Config struct{ Datacenter string } }
	t.decode("agent self", r, &self)
	t.Require(self.Config.Datacenter != "", "agent self names no datacenter: %s", r)
	return self.Config.Datacenter
}

// s81UnknownDC: reads and writes naming a datacenter the agent has no
// route to answer 500 "No path to datacenter" and change nothing, while
// the agent's own datacenter is served.
func s81UnknownDC(t *caseT) {
	own := t.ownDatacenter()
	other := "nowhere-" + t.ServiceName("dc")
	key := t.Key("dc")
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/status/leader"},
		{http.MethodGet, "/v1/status/peers"},
		{http.MethodGet, "/v1/catalog/nodes"},
		{http.MethodGet, "/v1/session/list"},
		{http.MethodPut, "/v1/kv/" + key},
	} {
		got := t.Do(r.method, r.path+"?dc="+url.QueryEscape(other), []byte("v"))
		t.Equal(r.method+" "+r.path+" in an unknown datacenter: status", got.Code, 500)
		t.Equal(r.method+" "+r.path+" in an unknown datacenter: reason", got.Text(), "No path to datacenter")
	}
	if kv, _ := t.Get(key); kv != nil {
		t.Errorf("a put refused for its datacenter stored %s", key)
	}
	for _, path := range []string{"/v1/status/leader", "/v1/status/peers"} {
		got := t.Do(http.MethodGet, path+"?dc="+url.QueryEscape(own), nil)
		t.Equal(path+" in the agent's own datacenter: status", got.Code, 200)
	}
}

// s82RaftIDs: every server of the raft configuration is listed under the
// node ID its catalog node carries, beside its node name.
func s82RaftIDs(t *caseT) {
	r := t.Do(http.MethodGet, "/v1/operator/raft/configuration", nil)
	t.Require(r.Code == 200, "raft configuration: want 200, got %s", r)
	var conf struct {
		Servers []struct {
			ID, Node, Address string
			Voter             bool
		}
	}
	t.decode("raft configuration", r, &conf)
	t.Require(len(conf.Servers) > 0, "raft configuration lists no server: %s", r)
	for _, s := range conf.Servers {
		n := t.Do(http.MethodGet, "/v1/catalog/node/"+url.PathEscape(s.Node), nil)
		t.Require(n.Code == 200, "catalog node %s: want 200, got %s", s.Node, n)
		var node struct{ Node *struct{ ID string } }
		t.decode("catalog node "+s.Node, n, &node)
		if !t.Check(node.Node != nil, "raft server %s names node %q, which the catalog does not have", s.ID, s.Node) {
			continue
		}
		t.Check(node.Node.ID != "" && strings.EqualFold(s.ID, node.Node.ID),
			"raft server at %s: ID %q, but its node %s carries node ID %q", s.Address, s.ID, s.Node, node.Node.ID)
	}
}
