package conformance

import (
	"net/http"
)

// Gossip membership: S53, S54.

func membershipCases() []Case {
	return []Case{
		{Clause: "S53", Name: "alive-member-registered-with-passing-serfhealth", Run: s53AliveMember},
		{Clause: "S54", Name: "no-dead-server-cleanup", Run: s54NoDeadServerCleanup},
	}
}

// s54NoDeadServerCleanup: the autopilot configuration says dead servers
// are not cleaned up, which is what keeps a failed server's node, and the
// sessions on it, in place (S54).
func s54NoDeadServerCleanup(t *T) {
	r := t.Do(http.MethodGet, "/v1/operator/autopilot/configuration", nil)
	t.Require(r.Code == 200, "autopilot configuration: want 200, got %s", r)
	var conf struct{ CleanupDeadServers *bool }
	t.decode("autopilot configuration", r, &conf)
	t.Require(conf.CleanupDeadServers != nil, "autopilot configuration has no CleanupDeadServers: %s", r)
	t.Check(!*conf.CleanupDeadServers, "CleanupDeadServers is true: failed servers would be force-left with their sessions")
}

// s53AliveMember: the serving agent is an alive member of its gossip pool,
// and the leader has registered its node with the gossip health check
// passing, under Consul's check name (CONSUL.md §13).
func s53AliveMember(t *T) {
	r := t.Do(http.MethodGet, "/v1/agent/self", nil)
	t.Require(r.Code == 200, "agent self: want 200, got %s", r)
	var self struct{ Config struct{ NodeName string } }
	t.decode("agent self", r, &self)
	node := self.Config.NodeName
	t.Require(node != "", "agent self names no node")

	r = t.Do(http.MethodGet, "/v1/agent/members", nil)
	t.Require(r.Code == 200, "agent members: want 200, got %s", r)
	var members []struct {
		Name   string
		Addr   string
		Port   int
		Status int
		Tags   map[string]string
	}
	t.decode("agent members", r, &members)
	found := false
	for _, m := range members {
		if m.Name != node {
			continue
		}
		found = true
		t.Equal("member "+node+" status (1 = alive)", m.Status, 1)
		t.Check(m.Addr != "" && m.Port > 0, "member %s has no gossip address: %+v", node, m)
	}
	t.Require(found, "agent %s is not among its own members: %+v", node, members)

	serf := t.NodeChecks(node)["serfHealth"]
	t.Require(serf != nil, "node %s has no serfHealth check", node)
	t.Equal("serfHealth status", serf.Status, "passing")
	t.Equal("serfHealth name", serf.Name, "Serf Health Status")
}
