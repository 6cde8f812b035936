package conformance

import (
	"net/http"
	"slices"
)

// Services and the session check lists: S55, S56.

func serviceCases() []Case {
	return []Case{
		{clause: "S55", name: "register-all-or-nothing", run: s55AllOrNothing},
		{clause: "S55", name: "service-deregistration-invalidates-bound-sessions", run: s55Dereg},
		{clause: "S56", name: "check-lists-read-back-as-created", run: s56ReadBack},
		{clause: "S56", name: "service-check-critical-invalidates", run: s56ServiceCritical},
	}
}

// A register whose check names a service the node does not have is
// refused whole: its node, service and other checks are not written.
func s55AllOrNothing(t *caseT) {
	n := t.RegisterNode("n")
	web := t.ServiceName("web")
	t.RegisterService(n, "web-1", web, []string{"a"}, checkSpec{"web-alive", "passing"})
	t.Equal("instances after a register of service and check", t.HealthService(web, ""), []string{n})
	checks := t.NodeChecks(n)
	if c := checks["web-alive"]; t.Check(c != nil, "service check web-alive missing on %s", n) {
		t.Equal("ServiceID of web-alive", c.ServiceID, "web-1")
		t.Equal("ServiceName of web-alive", c.ServiceName, web)
	}

	// A new node whose register carries a service and a check of another,
	// unknown service: nothing at all is written.
	ghost := t.RegisterNode("ghost") // registered so its cleanup exists, then removed
	t.DeregisterNode(ghost)
	db := t.ServiceName("db")
	r := t.DoJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": ghost, "Address": "127.0.0.1",
		"Service": map[string]any{"ID": "db-1", "Service": db},
		"Checks": []map[string]any{
			{"CheckID": "ok", "Name": "ok", "Status": "passing", "ServiceID": "db-1"},
			{"CheckID": "bad", "Name": "bad", "Status": "passing", "ServiceID": "nosuch"},
		},
	})
	// The reason's text differs between implementations (tenure's state
	// machine and Consul's endpoint word it differently); the refusal and
	// its lack of effect are the contract.
	t.Check(r.Code >= 400, "register with a check of an unknown service: want a rejection, got %s", r)
	node := t.Do(http.MethodGet, "/v1/catalog/node/"+ghost, nil)
	t.Check(node.Code == 200 && node.Text() == "null", "refused register wrote node %s: %s", ghost, node)
	t.Equal("instances of the refused register's service", t.HealthService(db, ""), []string(nil))

	// On an existing node too: the refused write leaves its checks as they were.
	r = t.DoJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": n, "Address": "127.0.0.1",
		"Checks": []map[string]any{
			{"CheckID": "web-alive", "Name": "web-alive", "Status": "critical", "ServiceID": "web-1"},
			{"CheckID": "bad", "Name": "bad", "Status": "passing", "ServiceID": "nosuch"},
		},
	})
	t.Check(r.Code >= 400, "second refused register: got %s", r)
	after := t.NodeChecks(n)
	t.Check(after["bad"] == nil, "refused register wrote check bad")
	if c := after["web-alive"]; c != nil {
		t.Equal("web-alive after a refused register", c.Status, "passing")
	}
}

// Deregistering a service removes it with its checks, which invalidates
// the sessions bound to them, and no other.
func s55Dereg(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"disk", "passing"})
	web := t.ServiceName("web")
	t.RegisterService(n, "web-1", web, nil, checkSpec{"web-alive", "passing"})
	k1, k2 := t.Key("k1"), t.Key("k2")
	bound := t.holding(n, []string{"web-alive"}, nil, k1)
	other := t.holding(n, []string{"disk"}, nil, k2)
	before := t.MustGet(k1)
	t.DeregisterService(n, "web-1")
	t.Check(!t.Alive(bound), "session bound to the deregistered service's check survived")
	t.Check(t.Alive(other), "session bound to a node check was invalidated")
	t.expectReleased("service deregistered", k1, before)
	t.Check(t.heldBy(k2, other), "the other session's key was released")
	t.Equal("instances after deregistration", t.HealthService(web, ""), []string(nil))
	t.Check(t.NodeChecks(n)["web-alive"] == nil, "the service's check outlived it")
	t.Check(t.NodeChecks(n)["disk"] != nil, "the node check went with the service")
}

// sessionLists is a session read's three check lists and whether the
// legacy Checks key was present at all.
type sessionLists struct {
	Checks, NodeChecks []string
	ServiceChecks      []struct{ ID string }
	hasChecks          bool
}

func (t *caseT) sessionLists(id string) sessionLists {
	r := t.Do(http.MethodGet, "/v1/session/info/"+id, nil)
	var raw []map[string]any
	var out []sessionLists
	t.decode("session info", r, &raw)
	t.decode("session info", r, &out)
	t.Require(len(out) == 1, "session %s: want one session, got %s", id, r)
	_, out[0].hasChecks = raw[0]["Checks"]
	return out[0]
}

// Every read returns NodeChecks and ServiceChecks as created, and the
// legacy Checks only when the create's fixup kept it; the session is bound
// to all three.
func s56ReadBack(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"a", "passing"}, checkSpec{"b", "passing"}, checkSpec{"c", "passing"})
	web := t.ServiceName("web")
	t.RegisterService(n, "web-1", web, nil, checkSpec{"web-alive", "passing"})

	legacy := t.CreateSession(map[string]any{"Node": n, "Checks": []string{"a", "b"}, "NodeChecks": []string{"c"}})
	l := t.sessionLists(legacy)
	t.Equal("legacy session Checks", l.Checks, []string{"a", "b"})
	t.Equal("legacy session NodeChecks", l.NodeChecks, []string{"c"})

	// Checks exactly [serfHealth] is dropped: NodeChecks decide, and reads
	// leave Checks out.
	modern := t.CreateSession(map[string]any{"Node": n, "Checks": []string{"serfHealth"}, "NodeChecks": []string{"c"},
		"ServiceChecks": []map[string]any{{"ID": "web-alive"}}})
	m := t.sessionLists(modern)
	t.Check(!m.hasChecks, "session with Checks [serfHealth] shows a Checks key")
	t.Equal("NodeChecks", m.NodeChecks, []string{"c"})
	t.Check(len(m.ServiceChecks) == 1 && m.ServiceChecks[0].ID == "web-alive", "ServiceChecks read back as %+v", m.ServiceChecks)
	for _, s := range t.NodeSessions(n) {
		if s.ID == modern {
			t.Check(len(s.ServiceChecks) == 1 && s.ServiceChecks[0].ID == "web-alive", "node listing shows ServiceChecks %+v", s.ServiceChecks)
		}
	}

	// The legacy list binds: b going critical ends the first session only.
	t.SetCheck(n, "b", "critical")
	t.Check(!t.Alive(legacy), "session bound through legacy Checks survived b going critical")
	t.Check(t.Alive(modern), "a session not bound to b was invalidated")
}

// A session bound through ServiceChecks (and one through NodeChecks naming
// a service check) is invalidated in the write that makes the check
// critical; warning does not.
func s56ServiceCritical(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"disk", "passing"})
	web := t.ServiceName("web")
	t.RegisterService(n, "web-1", web, nil, checkSpec{"web-alive", "passing"})
	k1, k2 := t.Key("k1"), t.Key("k2")
	byService := t.CreateSession(map[string]any{"Node": n, "Checks": []string{},
		"ServiceChecks": []map[string]any{{"ID": "web-alive"}}})
	t.Require(t.Acquire(k1, byService, "v"), "session %s could not acquire %s", byService, k1)
	byNode := t.holding(n, []string{"web-alive"}, nil, k2)
	t.SetServiceCheck(n, "web-1", "web-alive", "warning")
	t.Check(t.Alive(byService) && t.Alive(byNode), "a warning service check invalidated a session")
	t.SetServiceCheck(n, "web-1", "web-alive", "critical")
	t.Check(!t.Alive(byService), "session bound through ServiceChecks survived its check going critical")
	t.Check(!t.Alive(byNode), "session bound through NodeChecks to a service check survived it going critical")
	p1, p2 := t.MustGet(k1), t.MustGet(k2)
	t.Check(p1.Session == "" && p2.Session == "", "keys still held after the check went critical: %q %q", p1.Session, p2.Session)
	t.Check(slices.Equal(t.HealthService(web, "passing"), nil), "a critical instance passed ?passing")
}
