package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// Session creation: S1-S9, S47 and S65.

func sessionCases() []Case {
	return []Case{
		{clause: "S1", name: "fresh-ids-never-reused", run: s1FreshIDs},
		{clause: "S1", name: "fields-as-created", run: s1Fields},
		{clause: "S1", name: "immutable", run: s1Immutable},
		{clause: "S2", name: "defaults", run: s2Defaults},
		{clause: "S3", name: "ttl-accepted", run: s3TTLAccepted},
		{clause: "S3", name: "ttl-rejected-creates-nothing", run: s3TTLRejected},
		{clause: "S4", name: "behavior", run: s4Behavior},
		{clause: "S5", name: "lockdelay-above-60s-stored", run: s5Stored},
		{clause: "S5", name: "lockdelay-capped-at-60s", slow: true, run: s5Capped},
		{clause: "S5", name: "lockdelay-zero-disables", run: s5Zero},
		{clause: "S6", name: "unregistered-node-rejected", run: s6UnknownNode},
		{clause: "S6", name: "missing-check-rejected", run: s6MissingCheck},
		{clause: "S6", name: "check-on-other-node-rejected", run: s6OtherNode},
		{clause: "S6", name: "critical-check-rejected", run: s6Critical},
		{clause: "S6", name: "passing-and-warning-accepted", run: s6Warning},
		{clause: "S6", name: "default-serfhealth-must-exist", run: s6DefaultSerf},
		{clause: "S7", name: "empty-check-list-binds-nothing", run: s7EmptyChecks},
		{clause: "S8", name: "rejected-create-400-one-line", run: s8Rejected400},
		{clause: "S9", name: "validation-500-texts", run: s9Validation500},
		{clause: "S9", name: "lockdelay-number-below-1000-is-seconds", run: s9LockDelaySeconds},
		{clause: "S47", name: "empty-body-create-on-server-node", run: s47EmptyBody},
		{clause: "S65", name: "create-through-a-client-agent-before-it-joins", slow: true, agents: true,
			run: s65CreateBeforeJoin},
		{clause: "S65", name: "create-on-a-server-agent-before-it-leads", slow: true, agents: true,
			run: s65CreateBeforeLeader},
	}
}

func s1FreshIDs(t *caseT) {
	seen := map[string]bool{}
	var first []string
	for i := 0; i < 4; i++ {
		id := t.CreateUnboundSession(nil)
		t.Check(!seen[id], "session ID %s issued twice", id)
		seen[id] = true
		first = append(first, id)
	}
	for _, id := range first {
		t.Destroy(id)
	}
	for i := 0; i < 4; i++ {
		id := t.CreateUnboundSession(nil)
		t.Check(!seen[id], "session ID %s reissued after its session was destroyed", id)
		seen[id] = true
	}
}

func s1Fields(t *caseT) {
	node := t.RegisterNode("n", checkSpec{"c1", "passing"})
	body := map[string]any{"Node": node, "NodeChecks": []string{"c1"}, "Name": "conf-fields",
		"LockDelay": "3s", "Behavior": "delete", "TTL": "30s"}
	id := t.CreateSession(body)
	r := t.Do(http.MethodGet, "/v1/session/info/"+id, nil)
	t.Require(r.Code == 200, "session info: want 200, got %s", r)
	var raw []map[string]json.RawMessage
	t.decode("session info", r, &raw)
	t.Require(len(raw) == 1, "session info: want one session, got %d", len(raw))
	for _, f := range []string{"ID", "Name", "Node", "LockDelay", "Behavior", "TTL", "NodeChecks", "CreateIndex", "ModifyIndex"} {
		_, ok := raw[0][f]
		t.Check(ok, "session object lacks field %s: %s", f, r)
	}
	s := t.SessionInfo(id)
	t.Require(s != nil, "session %s not found right after create", id)
	t.Equal("ID", s.ID, id)
	t.Equal("Name", s.Name, "conf-fields")
	t.Equal("Node", s.Node, node)
	t.Equal("LockDelay", s.LockDelay, 3*time.Second)
	t.Equal("Behavior", s.Behavior, "delete")
	t.Equal("TTL", s.TTL, "30s")
	t.Equal("NodeChecks", s.NodeChecks, []string{"c1"})
	var idx struct{ CreateIndex, ModifyIndex uint64 }
	t.decode("session info", &resp{Code: 200, Body: mustJSON(raw[0])}, &idx)
	t.Check(idx.CreateIndex > 0 && idx.CreateIndex == idx.ModifyIndex,
		"want CreateIndex = ModifyIndex > 0, got %d, %d", idx.CreateIndex, idx.ModifyIndex)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("re-encode decoded JSON: %v", err)) // cannot fail for decoded values
	}
	return b
}

// sessionRaw reads a session's JSON object as the server sent it.
func (t *caseT) sessionRaw(id string) string {
	r := t.Do(http.MethodGet, "/v1/session/info/"+id, nil)
	t.Require(r.Code == 200, "session info: want 200, got %s", r)
	var raw []json.RawMessage
	t.decode("session info", r, &raw)
	t.Require(len(raw) == 1, "session info %s: want one session, got %d", id, len(raw))
	return string(raw[0])
}

func s1Immutable(t *caseT) {
	id := t.CreateUnboundSession(map[string]any{"TTL": "60s"})
	before := t.sessionRaw(id)
	k := t.Key("k")
	t.Require(t.Acquire(k, id, "v"), "acquire of a fresh key failed")
	r := t.Do(http.MethodPut, "/v1/session/renew/"+id, nil)
	t.Require(r.Code == 200, "renew: want 200, got %s", r)
	t.Require(t.Release(k, id, ""), "release by the holder failed")
	t.Equal("session after renew, acquire and release", t.sessionRaw(id), before)
}

func s2Defaults(t *caseT) {
	for _, body := range [][]byte{nil, []byte("{}")} {
		r := t.Do(http.MethodPut, "/v1/session/create", body)
		t.Require(r.Code == 200, "create with body %q: want 200, got %s", body, r)
		var out struct{ ID string }
		t.decode("create", r, &out)
		t.destroyLater(out.ID)
		s := t.SessionInfo(out.ID)
		t.Require(s != nil, "session %s not found right after create", out.ID)
		what := fmt.Sprintf("default (body %q) ", body)
		t.Check(s.Node != "", "%sNode is empty", what)
		t.Equal(what+"NodeChecks", s.NodeChecks, []string{"serfHealth"})
		t.Equal(what+"LockDelay", s.LockDelay, 15*time.Second)
		t.Equal(what+"Behavior", s.Behavior, "release")
		t.Equal(what+"TTL", s.TTL, "")
		// The serving agent's node, when the server exposes /v1/agent/self.
		self := t.Do(http.MethodGet, "/v1/agent/self", nil)
		if self.Code == 200 {
			var a struct{ Config struct{ NodeName string } }
			t.decode("agent self", self, &a)
			if a.Config.NodeName != "" {
				t.Equal(what+"Node vs /v1/agent/self", s.Node, a.Config.NodeName)
			}
		} else {
			t.Logf("no /v1/agent/self (%d); Node checked via the catalog only (S47)", self.Code)
		}
		t.Check(s.Node == "" || t.nodeExists(s.Node), "%sNode %q is not in the catalog", what, s.Node)
	}
}

// nodeExists reports whether the catalog has the node.
func (t *caseT) nodeExists(node string) bool {
	r := t.Do(http.MethodGet, "/v1/catalog/node/"+node, nil)
	if r.Code == 404 {
		return false
	}
	t.Require(r.Code == 200, "catalog node %s: %s", node, r)
	return r.Text() != "null" && r.Text() != ""
}

// rejected asserts a create was refused (any non-2xx) and made no session on node.
func (t *caseT) rejected(what string, r *resp, node string) {
	t.Check(r.Code >= 400, "%s: want a rejection, got %s", what, r)
	if node != "" {
		ss := t.NodeSessions(node)
		t.Check(len(ss) == 0, "%s: rejected create left %d session(s) on node %s", what, len(ss), node)
	}
}

func s3TTLAccepted(t *caseT) {
	node := t.HomeNode()
	for _, ttl := range []string{"", "0", "0s", "10s", "90s", "1h30m", "24h"} {
		id := t.CreateSessionOn(node, nil, map[string]any{"TTL": ttl})
		s := t.SessionInfo(id)
		t.Require(s != nil, "TTL %q: session %s not found after create", ttl, id)
		switch ttl {
		case "10s", "90s", "1h30m", "24h":
			t.Equal(fmt.Sprintf("TTL %q stored", ttl), s.TTL, ttl)
		}
	}
}

func s3TTLRejected(t *caseT) {
	node := t.HomeNode()
	for _, ttl := range []any{"abc", "10", "-10s", "-1h", "9s", "9999ms", "24h0m1s", "25h", 10} {
		r := t.CreateSessionRaw(map[string]any{"Node": node, "NodeChecks": []string{}, "TTL": ttl})
		t.rejected(fmt.Sprintf("TTL %#v", ttl), r, node)
	}
}

func s4Behavior(t *caseT) {
	node := t.HomeNode()
	for sent, want := range map[string]string{"": "release", "release": "release", "delete": "delete"} {
		id := t.CreateSessionOn(node, nil, map[string]any{"Behavior": sent})
		s := t.SessionInfo(id)
		t.Require(s != nil, "session %s not found after create", id)
		t.Equal(fmt.Sprintf("Behavior for %q", sent), s.Behavior, want)
		t.Destroy(id)
	}
	for _, b := range []string{"bogus", "destroy", "keep"} {
		r := t.CreateSessionRaw(map[string]any{"Node": node, "NodeChecks": []string{}, "Behavior": b})
		t.rejected(fmt.Sprintf("Behavior %q", b), r, node)
	}
}

func s5Stored(t *caseT) {
	for _, c := range []struct {
		sent any
		want time.Duration
	}{{"61s", 61 * time.Second}, {"90s", 90 * time.Second}, {"10m", 10 * time.Minute}} {
		id := t.CreateUnboundSession(map[string]any{"LockDelay": c.sent})
		s := t.SessionInfo(id)
		t.Require(s != nil, "session %s not found after create", id)
		t.Equal(fmt.Sprintf("LockDelay for %v", c.sent), s.LockDelay, c.want)
	}
}

// s5Capped: a 90s lock-delay is applied as 60s. Acquire must fail while the
// capped delay runs and succeed soon after it ends.
func s5Capped(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "90s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire of a fresh key failed")
	sent := time.Now()
	t.Destroy(a)
	done := time.Now()
	t.Check(!t.Acquire(k, b, ""), "acquire succeeded right after the holder was destroyed (no lock-delay)")
	t.SleepUntil(sent.Add(45 * time.Second))
	t.Check(!t.Acquire(k, b, ""), "acquire succeeded 45s after invalidation (lock-delay shorter than the 60s cap)")
	t.SleepUntil(sent.Add(58 * time.Second))
	got := t.WaitFor("acquire after the 60s cap", time.Until(done.Add(66*time.Second)),
		250*time.Millisecond, func() bool { return t.Acquire(k, b, "") })
	t.Check(!got.Before(sent.Add(60*time.Second)),
		"acquire succeeded %v after the destroy was sent, before the 60s cap ran out", got.Sub(sent))
}

func s5Zero(t *caseT) {
	for _, ld := range []any{"0s", 0} {
		k := t.Key(fmt.Sprintf("k-%v", ld))
		a := t.CreateUnboundSession(map[string]any{"LockDelay": ld})
		b := t.CreateUnboundSession(nil)
		s := t.SessionInfo(a)
		t.Require(s != nil, "session not found after create")
		t.Equal(fmt.Sprintf("LockDelay for %#v", ld), s.LockDelay, time.Duration(0))
		t.Require(t.Acquire(k, a, "v"), "acquire of a fresh key failed")
		t.Destroy(a)
		t.Check(t.Acquire(k, b, ""), "LockDelay %#v: acquire after invalidation refused; 0 must disable lock-delay", ld)
	}
}

func s6UnknownNode(t *caseT) {
	ghost := fmt.Sprintf("conf-%s-%d-ghost", t.env.runID, t.seq)
	for _, body := range []map[string]any{
		{"Node": ghost, "NodeChecks": []string{}},
		{"Node": ghost},
	} {
		r := t.CreateSessionRaw(body)
		t.rejected(fmt.Sprintf("create on unregistered node %v", body), r, ghost)
	}
}

func s6MissingCheck(t *caseT) {
	node := t.RegisterNode("n", checkSpec{"a", "passing"})
	for _, checks := range [][]string{{"b"}, {"a", "b"}} {
		r := t.CreateSessionRaw(map[string]any{"Node": node, "NodeChecks": checks})
		t.rejected(fmt.Sprintf("NodeChecks %v with b unregistered", checks), r, node)
	}
}

func s6OtherNode(t *caseT) {
	n1 := t.RegisterNode("n1", checkSpec{"shared", "passing"})
	n2 := t.RegisterNode("n2")
	r := t.CreateSessionRaw(map[string]any{"Node": n2, "NodeChecks": []string{"shared"}})
	t.rejected("check registered on another node", r, n2)
	t.Check(len(t.NodeSessions(n1)) == 0, "a session appeared on the check's node %s", n1)
}

func s6Critical(t *caseT) {
	node := t.RegisterNode("n", checkSpec{"ok", "passing"}, checkSpec{"bad", "critical"})
	for _, checks := range [][]string{{"bad"}, {"ok", "bad"}} {
		r := t.CreateSessionRaw(map[string]any{"Node": node, "NodeChecks": checks})
		t.rejected(fmt.Sprintf("NodeChecks %v with bad critical", checks), r, node)
	}
}

func s6Warning(t *caseT) {
	node := t.RegisterNode("n", checkSpec{"ok", "passing"}, checkSpec{"warn", "warning"})
	for _, checks := range [][]string{{"ok"}, {"warn"}, {"ok", "warn"}} {
		id := t.CreateSessionOn(node, checks, nil)
		s := t.SessionInfo(id)
		t.Require(s != nil, "session %s not found after create", id)
		t.Equal("NodeChecks", s.NodeChecks, checks)
	}
}

func s6DefaultSerf(t *caseT) {
	node := t.RegisterNode("n", checkSpec{"c", "passing"})
	r := t.CreateSessionRaw(map[string]any{"Node": node})
	t.rejected("default NodeChecks [serfHealth] on a node without serfHealth", r, node)
}

func s7EmptyChecks(t *caseT) {
	// The node has a critical check and no serfHealth: a create that bound
	// any check at all would be refused.
	node := t.RegisterNode("n", checkSpec{"crit", "critical"}, checkSpec{"c", "passing"})
	var ids []string
	for _, body := range []map[string]any{
		{"Node": node, "NodeChecks": []string{}},
		{"Node": node, "Checks": []string{}},
	} {
		id := t.CreateSession(body)
		s := t.SessionInfo(id)
		t.Require(s != nil, "session %s not found after create", id)
		t.Check(len(s.NodeChecks) == 0 && len(s.Checks) == 0 && len(s.ServiceChecks) == 0,
			"%v: session is bound to checks %v %v %v", body, s.NodeChecks, s.Checks, s.ServiceChecks)
		ids = append(ids, id)
	}
	// Bound to no check: check events leave them alone; the node takes them.
	t.SetCheck(node, "c", "critical")
	t.DeregisterCheck(node, "c")
	for _, id := range ids {
		t.Check(t.Alive(id), "session %s with no checks was invalidated by a check event", id)
	}
	t.DeregisterNode(node)
	for _, id := range ids {
		t.Check(!t.Alive(id), "session %s survived deregistration of its node", id)
	}
}

// badCreates are create bodies every server must refuse; reason names what
// is wrong. The node and checks are set up by createFailures.
type badCreate struct {
	what string
	body any
	raw  []byte // sent as is when set (malformed JSON)
}

func createFailures(t *caseT) (node string, bad []badCreate) {
	node = t.RegisterNode("n", checkSpec{"ok", "passing"}, checkSpec{"crit", "critical"})
	ghost := fmt.Sprintf("conf-%s-%d-ghost", t.env.runID, t.seq)
	nc := []string{}
	return node, []badCreate{
		{what: "unparseable TTL", body: map[string]any{"Node": node, "NodeChecks": nc, "TTL": "abc"}},
		{what: "TTL below 10s", body: map[string]any{"Node": node, "NodeChecks": nc, "TTL": "5s"}},
		{what: "TTL above 24h", body: map[string]any{"Node": node, "NodeChecks": nc, "TTL": "25h"}},
		{what: "negative TTL", body: map[string]any{"Node": node, "NodeChecks": nc, "TTL": "-10s"}},
		{what: "unknown behavior", body: map[string]any{"Node": node, "NodeChecks": nc, "Behavior": "bogus"}},
		{what: "unregistered node", body: map[string]any{"Node": ghost, "NodeChecks": nc}},
		{what: "missing check", body: map[string]any{"Node": node, "NodeChecks": []string{"nope"}}},
		{what: "critical check", body: map[string]any{"Node": node, "NodeChecks": []string{"crit"}}},
		{what: "malformed JSON", raw: []byte(`{"Node": `)},
	}
}

func (t *caseT) sendBad(b badCreate) *resp {
	if b.raw != nil {
		r := t.Do(http.MethodPut, "/v1/session/create", b.raw)
		if r.Code == 200 {
			var out struct{ ID string }
			if json.Unmarshal(r.Body, &out) == nil {
				t.destroyLater(out.ID)
			}
		}
		return r
	}
	return t.CreateSessionRaw(b.body)
}

func s8Rejected400(t *caseT) {
	node, bad := createFailures(t)
	for _, b := range bad {
		r := t.sendBad(b)
		t.Check(r.Code == 400, "%s: want 400, got %s", b.what, r)
		txt := r.Text()
		t.Check(txt != "" && !strings.Contains(txt, "\n"), "%s: want a one-line reason, got %q", b.what, txt)
	}
	t.Check(len(t.NodeSessions(node)) == 0, "rejected creates left sessions on %s", node)
}

func s9Validation500(t *caseT) {
	node, bad := createFailures(t)
	want := map[string]struct {
		code int
		text string
	}{
		"unparseable TTL":   {500, "Session TTL 'abc' invalid"},
		"TTL below 10s":     {500, "Invalid Session TTL '5000000000', must be between [10s=24h0m0s]"},
		"TTL above 24h":     {500, "Invalid Session TTL '90000000000000', must be between [10s=24h0m0s]"},
		"negative TTL":      {500, "Invalid Session TTL '-10000000000', must be between [10s=24h0m0s]"},
		"unknown behavior":  {500, "Invalid Behavior setting 'bogus'"},
		"unregistered node": {500, "Missing node registration"},
		"missing check":     {500, "Missing check 'nope' registration"},
		"critical check":    {500, "Check 'crit' is in critical state"},
		"malformed JSON":    {400, "Request decode failed"},
	}
	for _, b := range bad {
		w, ok := want[b.what]
		t.Require(ok, "no expectation for %q", b.what)
		r := t.sendBad(b)
		t.Check(r.Code == w.code && strings.Contains(r.Text(), w.text),
			"%s: want %d with %q, got %s", b.what, w.code, w.text, r)
	}
	t.Check(len(t.NodeSessions(node)) == 0, "rejected creates left sessions on %s", node)
}

func s9LockDelaySeconds(t *caseT) {
	for _, c := range []struct {
		sent any
		want time.Duration
	}{{15, 15 * time.Second}, {2, 2 * time.Second}, {999, 999 * time.Second},
		{1000, 1000 * time.Nanosecond}, {2000000000, 2 * time.Second}} {
		id := t.CreateUnboundSession(map[string]any{"LockDelay": c.sent})
		s := t.SessionInfo(id)
		t.Require(s != nil, "session %s not found after create", id)
		t.Equal(fmt.Sprintf("LockDelay for %#v", c.sent), s.LockDelay, c.want)
	}
}

func s47EmptyBody(t *caseT) {
	r := t.Do(http.MethodPut, "/v1/session/create", nil)
	t.Require(r.Code == 200, "create with no body: want 200, got %s", r)
	var out struct{ ID string }
	t.decode("create", r, &out)
	t.destroyLater(out.ID)
	s := t.SessionInfo(out.ID)
	t.Require(s != nil, "session %s not found after create", out.ID)
	checks := t.NodeChecks(s.Node)
	serf := checks["serfHealth"]
	t.Require(serf != nil, "server node %q has no serfHealth check (checks: %v)", s.Node, keys(checks))
	t.Equal("serfHealth status on "+s.Node, serf.Status, api.HealthPassing)
}

// s65CreateBeforeJoin: an empty-body create sent to a client agent that has
// not joined the pool yet is held, not refused; the agent joins a second
// later, and the create then makes a session on the agent's node bound to
// its serfHealth.
func s65CreateBeforeJoin(t *caseT) {
	join, _ := t.poolAddr()
	a := t.StartLoneAgent("create-before-join")
	joined := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		joined <- a.join(join)
	}()
	r := a.Do(http.MethodPut, "/v1/session/create")
	err := <-joined
	t.Require(err == nil, "join agent %s to %s: %v", a.Node, join, err)
	t.Require(r.Code == 200, "empty-body create through agent %s before it joined: want 200, got %s", a.Node, r)
	var out struct{ ID string }
	t.decode("create", r, &out)
	t.destroyLater(out.ID)
	s := t.SessionInfo(out.ID)
	t.Require(s != nil, "session %s not found after create", out.ID)
	t.Equal("node of the session made through agent "+a.Node, s.Node, a.Node)
	t.Equal("NodeChecks of the session made through agent "+a.Node, s.NodeChecks, []string{"serfHealth"})
}

// s65CreateBeforeLeader: an empty-body create sent to a server agent of
// its own cluster the moment its HTTP API answers, before it has elected
// itself and registered its node, is held, not refused; it then makes a
// session on the server's node bound to its serfHealth.
func s65CreateBeforeLeader(t *caseT) {
	a := t.StartLoneAgent("server-before-leader", "-server", "-bootstrap-expect", "1")
	r := a.Do(http.MethodPut, "/v1/session/create")
	t.Require(r.Code == 200, "empty-body create on server agent %s as it starts: want 200, got %s", a.Node, r)
	var out struct{ ID string }
	t.decode("create", r, &out)
	r = a.Do(http.MethodGet, "/v1/session/info/"+out.ID)
	t.Require(r.Code == 200, "session info on server agent %s: want 200, got %s", a.Node, r)
	var info []struct {
		Node       string
		NodeChecks []string
	}
	t.decode("session info", r, &info)
	t.Require(len(info) == 1, "session %s on server agent %s: want one, got %s", out.ID, a.Node, r)
	t.Equal("node of the session made on server agent "+a.Node, info[0].Node, a.Node)
	t.Equal("NodeChecks of the session made on server agent "+a.Node, info[0].NodeChecks, []string{"serfHealth"})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
