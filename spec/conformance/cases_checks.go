package conformance

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Agent checks through the agent API only, so that the cases run on real
// Consul too: a TTL check that stops being passed and an HTTP check whose
// target fails go critical on their agent by themselves, reach the catalog
// by anti-entropy and end the sessions bound to them (S12); maintenance
// adds a check that is born critical, so no session can bind it (S6); and
// the agent endpoints answer with Consul's codes (S61).

// The two S12 cases wait a few seconds of real check timers but are not
// marked slow: slow cases start first, and two more of them delay the quick
// cases by seconds, enough for the in-process dev agent's 2 s reap window
// to raise the LockIndex floor under S26 and S27 before they run.
func checkCases() []Case {
	return []Case{
		{clause: "S12", name: "agent-ttl-check-expiry-invalidates", run: s12AgentTTLExpiry},
		{clause: "S12", name: "agent-http-check-failure-invalidates", run: s12AgentHTTPFailure},
		{clause: "S6", name: "maintenance-check-born-critical-binds-nothing", run: s6Maintenance},
		{clause: "S61", name: "agent-endpoints-answer-consul-codes", run: s61AgentCodes},
	}
}

// catalogStatus waits until the catalog shows the agent's check id with
// status.
func (t *caseT) catalogStatus(node, id, status string, timeout time.Duration) {
	t.WaitFor("check "+id+" "+status+" in the catalog", timeout, 100*time.Millisecond, func() bool {
		return t.CatalogCheckStatus(node, id) == status
	})
}

// A TTL check kept passing holds its session up; once the application stops
// passing it, the check expires on the agent, the catalog learns it, and
// the session bound to it is invalidated and its lock released.
func s12AgentTTLExpiry(t *caseT) {
	node := t.AgentNode()
	id := t.RegisterAgentCheck("ttl", map[string]any{"TTL": "2s", "Status": "passing"})
	t.catalogStatus(node, id, "passing", 10*time.Second)
	k := t.Key("held")
	sid := t.holding(node, []string{id}, nil, k)
	before := t.MustGet(k)
	for range 4 {
		t.agentPut("/v1/agent/check/pass/"+url.PathEscape(id)+"?note=alive", nil)
		t.Sleep(time.Second)
	}
	t.Require(t.Alive(sid), "session ended while its TTL check was kept passing")
	t.WaitFor("the expired TTL check to end its session", 30*time.Second, 100*time.Millisecond, func() bool {
		return !t.Alive(sid)
	})
	t.expectReleased("after the TTL check expired", k, before)
	t.Equal("catalog status of the expired TTL check", t.CatalogCheckStatus(node, id), "critical")
	if c := t.NodeChecks(node)[id]; c != nil {
		t.Check(strings.HasPrefix(c.Output, "TTL expired"), "output of the expired check: %q", c.Output)
	}
}

// An HTTP check the agent runs against a target that starts failing goes
// critical, and the session bound to it ends.
func s12AgentHTTPFailure(t *caseT) {
	node := t.AgentNode()
	target := t.StartHTTPTarget()
	id := t.RegisterAgentCheck("http", map[string]any{"HTTP": target.URL, "Interval": "1s", "Status": "passing"})
	t.catalogStatus(node, id, "passing", 10*time.Second)
	k := t.Key("held")
	sid := t.holding(node, []string{id}, nil, k)
	before := t.MustGet(k)
	t.Sleep(2500 * time.Millisecond) // a few passing probes
	t.Require(t.Alive(sid), "session ended while its HTTP check's target answered 200")
	target.Fail()
	t.WaitFor("the failing HTTP check to end its session", 30*time.Second, 100*time.Millisecond, func() bool {
		return !t.Alive(sid)
	})
	t.expectReleased("after the HTTP check failed", k, before)
	if c := t.NodeChecks(node)[id]; t.Check(c != nil, "HTTP check %s missing from the catalog", id) {
		t.Equal("catalog status of the failing HTTP check", c.Status, "critical")
		t.Check(strings.Contains(c.Output, "503"), "output of the failing check: %q", c.Output)
	}
}

// Node and service maintenance add critical checks to the catalog. A
// session cannot be bound to them (S6: a critical check is refused at
// create), and sessions bound to serfHealth live on; disabling removes the
// checks.
func s6Maintenance(t *caseT) {
	node := t.AgentNode()
	svc := t.RegisterAgentService("maint", nil)
	sid := t.CreateSessionOn(node, []string{"serfHealth"}, nil)
	maintID := "_service_maintenance:" + svc
	t.agentCleanup("/v1/agent/service/maintenance/" + url.PathEscape(svc) + "?enable=false")
	t.agentCleanup("/v1/agent/maintenance?enable=false")
	t.agentPut("/v1/agent/service/maintenance/"+url.PathEscape(svc)+"?enable=true&reason=conformance", nil)
	t.agentPut("/v1/agent/maintenance?enable=true", nil)
	checks := t.NodeChecks(node)
	if c := checks[maintID]; t.Check(c != nil, "no %s in the catalog after enabling", maintID) {
		t.Equal("service maintenance status", c.Status, "critical")
		t.Equal("service maintenance ServiceID", c.ServiceID, svc)
		t.Equal("service maintenance Notes", c.Notes, "conformance")
	}
	if c := checks["_node_maintenance"]; t.Check(c != nil, "no _node_maintenance in the catalog after enabling") {
		t.Equal("node maintenance status", c.Status, "critical")
	}
	for _, id := range []string{maintID, "_node_maintenance"} {
		r := t.CreateSessionRaw(map[string]any{"Node": node, "NodeChecks": []string{id}, "LockDelay": "0s"})
		if t.Check(r.Code >= 400, "session bound to maintenance check %s: want a refusal, got %s", id, r) {
			t.Check(strings.Contains(r.Text(), "Check '"+id+"' is in critical state"), "refusal of %s: %s", id, r)
		}
	}
	t.Check(t.Alive(sid), "a serfHealth session ended when maintenance began")
	t.agentPut("/v1/agent/maintenance?enable=false", nil)
	t.agentPut("/v1/agent/service/maintenance/"+url.PathEscape(svc)+"?enable=false", nil)
	checks = t.NodeChecks(node)
	t.Check(checks[maintID] == nil && checks["_node_maintenance"] == nil, "maintenance checks left after disabling")
	t.Check(t.Alive(sid), "a serfHealth session ended when maintenance ended")
}

// s61AgentCodes: the refusals of the agent endpoints, with Consul's status
// and reason, each changing nothing.
func s61AgentCodes(t *caseT) {
	ttl := t.RegisterAgentCheck("ttl", map[string]any{"TTL": "1h", "Status": "passing"})
	httpID := t.RegisterAgentCheck("http", map[string]any{"HTTP": "http://127.0.0.1:1/", "Interval": "1h", "Status": "passing"})
	svc := t.RegisterAgentService("svc", nil)
	ghost := t.ServiceName("ghost")
	for _, tc := range []struct {
		method, path string
		body         any
		code         int
		reason       string
	}{
		{http.MethodPut, "/v1/agent/check/pass/" + ghost, nil, 404, `Unknown check ID "` + ghost + `". Ensure that the check ID is passed, not the check name.`},
		{http.MethodPut, "/v1/agent/check/fail/" + httpID, nil, 500, `CheckID "` + httpID + `" does not have associated TTL`},
		{http.MethodPut, "/v1/agent/check/update/" + ttl, map[string]any{"Status": "bogus"}, 400, "Invalid check status: 'bogus'"},
		{http.MethodPut, "/v1/agent/check/deregister/" + ghost, nil, 404, `Unknown check ID "` + ghost + `"`},
		{http.MethodPut, "/v1/agent/check/register", map[string]any{"TTL": "1s"}, 400, "Missing check name"},
		{http.MethodPut, "/v1/agent/check/register", map[string]any{"Name": ghost}, 400, "Invalid check: TTL must be > 0 for TTL checks"},
		{http.MethodPut, "/v1/agent/check/register", map[string]any{"Name": ghost, "TTL": "1s", "Bogus": 1}, 400, "Request decode failed:"},
		{http.MethodPut, "/v1/agent/check/register", map[string]any{"Name": ghost, "TTL": "1s", "ServiceID": ghost}, 404, `ServiceID "` + ghost + `" does not exist`},
		{http.MethodPut, "/v1/agent/service/register", map[string]any{"Port": 1}, 400, "Missing service name"},
		{http.MethodPut, "/v1/agent/service/deregister/" + ghost, nil, 404, `Unknown service ID "` + ghost + `". Ensure that the service ID is passed, not the service name.`},
		{http.MethodGet, "/v1/agent/service/" + ghost, nil, 404, "unknown service ID: " + ghost},
		{http.MethodPut, "/v1/agent/maintenance", nil, 400, "Missing value for enable"},
		{http.MethodPut, "/v1/agent/service/maintenance/" + svc + "?enable=maybe", nil, 400, `Invalid value for enable: "maybe"`},
		{http.MethodPut, "/v1/agent/service/maintenance/" + ghost + "?enable=true", nil, 404, `Unknown service ID "` + ghost + `"`},
	} {
		var r *resp
		if tc.body == nil {
			r = t.Do(tc.method, tc.path, nil)
		} else {
			r = t.DoJSON(tc.method, tc.path, tc.body)
		}
		t.Check(r.Code == tc.code && strings.Contains(r.Text(), tc.reason), "%s %s: want %d %q, got %s", tc.method, tc.path, tc.code, tc.reason, r)
	}
	r := t.Do(http.MethodGet, "/v1/agent/checks", nil)
	var checks map[string]struct{ Status, Output string }
	t.decode("agent checks", r, &checks)
	t.Equal("TTL check after refusals", checks[ttl].Status, "passing")
	t.Check(checks[ghost].Status == "", "a refused register created check %s", ghost)
	r = t.Do(http.MethodGet, "/v1/agent/services", nil)
	var svcs map[string]any
	t.decode("agent services", r, &svcs)
	t.Check(svcs[ghost] == nil && svcs[svc] != nil, "services after refusals: %v", svcs)
}
