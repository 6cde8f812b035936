package conformance

import (
	"net/http"
	"net/url"
	"time"
)

// Gossip membership: S53, S54.

func membershipCases() []Case {
	return []Case{
		{clause: "S53", name: "alive-member-registered-with-passing-serfhealth", run: s53AliveMember},
		{clause: "S53", name: "server-node-carries-consul-service", run: s53ConsulService},
		{clause: "S53", name: "failed-member-invalidates-only-serfhealth-sessions-force-leave-the-rest", slow: true, agents: true,
			run: s53FailedThenForceLeft},
		{clause: "S53", name: "left-member-deregistered-with-all-its-sessions", slow: true, agents: true, run: s53Left},
		{clause: "S54", name: "no-dead-server-cleanup", run: s54NoDeadServerCleanup},
	}
}

// s54NoDeadServerCleanup: the autopilot configuration says dead servers
// are not cleaned up, which is what keeps a failed server's node, and the
// sessions on it, in place (S54).
func s54NoDeadServerCleanup(t *caseT) {
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
func s53AliveMember(t *caseT) {
	node := t.AgentNode()
	r := t.Do(http.MethodGet, "/v1/agent/members", nil)
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

// A server's node carries the "consul" service the leader registers for
// it, through which clients find the servers: raft protocol 3, the
// server's version, and healthy while the server is.
func s53ConsulService(t *caseT) {
	node := t.AgentNode()
	r := t.Do(http.MethodGet, "/v1/health/service/consul?passing", nil)
	t.Require(r.Code == 200, "health service consul: want 200, got %s", r)
	var entries []struct {
		Node    struct{ Node string }
		Service struct {
			ID, Service string
			Port        int
			Meta        map[string]string
		}
	}
	t.decode("health service consul", r, &entries)
	for _, e := range entries {
		if e.Node.Node != node {
			continue
		}
		t.Equal("consul service ID", e.Service.ID, "consul")
		t.Check(e.Service.Port > 0, "consul service on %s has no port", node)
		t.Equal("consul service raft_version", e.Service.Meta["raft_version"], "3")
		t.Check(e.Service.Meta["version"] != "", "consul service on %s names no version: %v", node, e.Service.Meta)
		return
	}
	t.Errorf("server %s is not among the passing instances of service consul: %s", node, r)
}

// memberTimeout bounds how long gossip and the leader may take to act on a
// failure or a leave: failure detection plus one raft write (CONSUL.md §13).
const memberTimeout = 90 * time.Second

// heldPair is a member's two sessions, each holding a key: bound is the
// default session (bound to the member's serfHealth), free is bound to no
// check.
type heldPair struct{ bound, free, boundKey, freeKey string }

func holdTwo(t *caseT, a *clientAgent) heldPair {
	h := heldPair{boundKey: t.Key("bound"), freeKey: t.Key("free")}
	// The default check list, so bound to serfHealth as every session an
	// agent creates for itself is (S2).
	h.bound = t.CreateSession(map[string]any{"Node": a.Node})
	h.free = t.CreateSessionOn(a.Node, nil, nil)
	t.Require(t.Acquire(h.boundKey, h.bound, "b"), "acquire %s with the serfHealth session answered false", h.boundKey)
	t.Require(t.Acquire(h.freeKey, h.free, "f"), "acquire %s with the unbound session answered false", h.freeKey)
	return h
}

// s53FailedThenForceLeft: a member killed with -9 is declared failed: only
// its serfHealth goes critical, taking the sessions bound to it and no
// others, and the node stays registered. A force-leave of the failed
// member then deregisters the node, taking every session left on it.
func s53FailedThenForceLeft(t *caseT) {
	a := t.StartAgent("failed")
	h := holdTwo(t, a)
	a.Kill()

	t.WaitFor("serfHealth of the killed member to go critical", memberTimeout, 100*time.Millisecond, func() bool {
		c := t.NodeChecks(a.Node)["serfHealth"]
		return c != nil && c.Status == "critical"
	})
	t.Check(!t.Alive(h.bound), "session %s bound to serfHealth outlived the critical check", h.bound)
	if kv := t.MustGet(h.boundKey); kv.Session != "" {
		t.Errorf("key %s still held by %q after its session's check went critical", h.boundKey, kv.Session)
	}
	t.Check(t.Alive(h.free), "session %s bound to no check was invalidated by the failure", h.free)
	t.Equal("holder of "+h.freeKey+" after the failure", t.MustGet(h.freeKey).Session, h.free)

	r := t.Do(http.MethodPut, "/v1/agent/force-leave/"+url.PathEscape(a.Node), nil)
	t.Require(r.Code == 200, "force-leave %s: want 200, got %s", a.Node, r)
	t.WaitFor("the force-left member's unbound session to be invalidated", memberTimeout, 100*time.Millisecond,
		func() bool { return !t.Alive(h.free) })
	t.Equal("checks of the force-left node", len(t.NodeChecks(a.Node)), 0)
	if kv := t.MustGet(h.freeKey); kv.Session != "" {
		t.Errorf("key %s still held by %q after its node was deregistered", h.freeKey, kv.Session)
	}
}

// s53Left: a member that leaves gracefully is deregistered, taking every
// session on its node, bound to serfHealth or not.
func s53Left(t *caseT) {
	a := t.StartAgent("left")
	h := holdTwo(t, a)
	a.Leave()

	t.WaitFor("the left member's node to be deregistered", memberTimeout, 100*time.Millisecond, func() bool {
		return len(t.NodeChecks(a.Node)) == 0
	})
	t.Check(!t.Alive(h.bound), "session %s outlived its node's deregistration", h.bound)
	t.Check(!t.Alive(h.free), "unbound session %s outlived its node's deregistration", h.free)
	for _, k := range []string{h.boundKey, h.freeKey} {
		if kv := t.MustGet(k); kv.Session != "" {
			t.Errorf("key %s still held by %q after its node was deregistered", k, kv.Session)
		}
	}
}
