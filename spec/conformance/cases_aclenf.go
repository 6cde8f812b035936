package conformance

import (
	"net/http"
	"net/url"
	"strings"
)

// ACL cases for the endpoints beyond sessions and KV (S90, S91): the
// catalog, health, agent, operator, txn and prepared-query endpoints, as
// measured on Consul 1.22 (CONSUL.md §23).
func aclEnforcementCases() []Case {
	acl := func(clause, name string, run func(t *caseT)) Case {
		return Case{clause: clause, name: name, acl: true, run: run}
	}
	return []Case{
		acl("S90", "catalog-writes-need-node-and-service-write", catalogWritesNeedWrite),
		acl("S90", "catalog-and-health-reads-filtered", catalogReadsFiltered),
		acl("S90", "agent-and-operator-endpoints-need-their-permissions", agentAndOperatorNeedPermissions),
		acl("S90", "agent-register-resolves-the-token-early", agentRegisterResolvesTokenEarly),
		acl("S90", "txn-denied-op-refuses-the-whole-txn", txnDeniedOpRefusesAll),
		acl("S90", "prepared-queries-governed-by-name", preparedQueriesByName),
		acl("S91", "txn-service-op-decided-on-the-stored-service", txnServiceOpOnStoredService),
	}
}

// catalogWritesNeedWrite: a register needs node:write unless it leaves the
// node as it is, service:write on its service; a deregister node:write or
// service:write on what it removes; a denial moves no index.
func catalogWritesNeedWrite(t *caseT) {
	node := t.HomeNode()
	web, db := t.ServiceName("web"), t.ServiceName("db")
	t.RegisterService(node, "db1", db, nil)
	writer, acc := t.CreateToken(t.policyName("web", rulesJSON(map[string]any{"service": named(web, "write")})))
	other := node + "-new"
	for _, c := range []struct {
		what, op string
		body     map[string]any
		text     string
	}{
		{"a new node", "register", map[string]any{"Node": other, "Address": "127.0.0.1",
			"Service": map[string]any{"Service": web, "ID": "w"}}, denied(acc, "node:write", other)},
		{"another service", "register", map[string]any{"Node": node, "Address": "127.0.0.1",
			"Service": map[string]any{"Service": db, "ID": "db2"}}, denied(acc, "service:write", db)},
		{"a changed node", "register", map[string]any{"Node": node, "Address": "127.0.0.2",
			"Service": map[string]any{"Service": web, "ID": "w"}}, denied(acc, "node:write", node)},
		{"a node check", "register", map[string]any{"Node": node, "Address": "127.0.0.1",
			"Check": map[string]any{"CheckID": "c", "Name": "c"}}, denied(acc, "node:write", node)},
		{"another service's instance", "deregister", map[string]any{"Node": node, "ServiceID": "db1"}, denied(acc, "service:write", db)},
		{"the node", "deregister", map[string]any{"Node": node}, denied(acc, "node:write", node)},
	} {
		t.expect(c.op+" "+c.what, t.DoAs(writer, http.MethodPut, "/v1/catalog/"+c.op, mustJSON(c.body)), 403, c.text)
	}
	// Nothing of them happened (other cases write the catalog meanwhile,
	// so the records are compared rather than an index).
	t.expect("no new node", t.Do(http.MethodGet, "/v1/catalog/node/"+url.PathEscape(other), nil), 200, "null")
	var ns struct {
		Node     struct{ Address string }
		Services map[string]struct{ Service string }
	}
	t.decode("the node", t.Do(http.MethodGet, "/v1/catalog/node/"+url.PathEscape(node), nil), &ns)
	t.Equal("the node's address", ns.Node.Address, "127.0.0.1")
	t.Equal("the node's services", len(ns.Services), 1)
	t.Equal("db1", ns.Services["db1"].Service, db)
	_, check := t.NodeChecks(node)["c"]
	t.Check(!check, "a denied register added node check c")
	t.expect("anonymous register", t.DoAs("", http.MethodPut, "/v1/catalog/register",
		mustJSON(map[string]any{"Node": other, "Address": "127.0.0.1"})), 403, deniedAnonymous("node:write", other))
	// Re-posting the node as it is needs no node:write.
	t.expect("register web on the node as it is", t.DoAs(writer, http.MethodPut, "/v1/catalog/register",
		mustJSON(map[string]any{"Node": node, "Address": "127.0.0.1", "Service": map[string]any{"Service": web, "ID": "w"}})), 200, "true")
	t.expect("deregister it", t.DoAs(writer, http.MethodPut, "/v1/catalog/deregister",
		mustJSON(map[string]any{"Node": node, "ServiceID": "w"})), 200, "true")
}

// catalogReadsFiltered: catalog and health reads keep what node:read and
// service:read allow and say so, except to the anonymous token.
func catalogReadsFiltered(t *caseT) {
	a, b := t.RegisterNode("a"), t.RegisterNode("b")
	svc := t.ServiceName("svc")
	t.RegisterService(a, "s1", svc, nil, checkSpec{ID: "c1", Status: "passing"})
	t.RegisterService(b, "s2", svc, nil, checkSpec{ID: "c2", Status: "passing"})
	reader, _ := t.CreateToken(t.policyName("read", rulesJSON(map[string]any{
		"node": named(a, "read"), "service": named(svc, "read")})))
	esc := url.PathEscape
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/v1/catalog/service/" + esc(svc), []string{a}},
		{"/v1/health/service/" + esc(svc), []string{a}},
		{"/v1/health/checks/" + esc(svc), []string{a}},
	} {
		r := t.DoAs(reader, http.MethodGet, c.path, nil)
		if !t.expect(c.path, r, 200, "") {
			continue
		}
		t.Equal(c.path+" nodes", entryNodes(t, c.path, r), c.want)
		t.Equal(c.path+" filtered header", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "true")
	}
	r := t.DoAs(reader, http.MethodGet, "/v1/catalog/node/"+esc(b), nil)
	if t.expect("node b", r, 200, "null") {
		t.Equal("node b filtered header", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "true")
	}
	r = t.DoAs("", http.MethodGet, "/v1/catalog/service/"+esc(svc), nil)
	if t.expect("anonymous service read", r, 200, "[]") {
		t.Equal("anonymous is not told", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "")
	}
	r = t.DoAs(reader, http.MethodGet, "/v1/catalog/services", nil)
	var names map[string][]string
	t.decode("services", r, &names)
	_, ok := names[svc]
	t.Check(ok, "the reader's services lack %s: %s", svc, r)
	t.Equal("services filtered header", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "true")
}

// entryNodes is the node of each entry of a catalog service, health
// service or health checks read, in the answer's order.
func entryNodes(t *caseT, path string, r *resp) []string {
	var out []string
	if strings.HasPrefix(path, "/v1/health/service/") {
		var entries []struct{ Node struct{ Node string } }
		t.decode(path, r, &entries)
		for _, e := range entries {
			out = append(out, e.Node.Node)
		}
		return out
	}
	var entries []struct{ Node string }
	t.decode(path, r, &entries)
	for _, e := range entries {
		out = append(out, e.Node)
	}
	return out
}

// agentAndOperatorNeedPermissions: the agent's own endpoints and the
// operator endpoints refuse the anonymous token with Consul's texts;
// /v1/status stays open.
func agentAndOperatorNeedPermissions(t *caseT) {
	var self struct{ Config struct{ NodeName string } }
	t.decode("agent self", t.Do(http.MethodGet, "/v1/agent/self", nil), &self)
	agent := self.Config.NodeName
	if agent == "" {
		t.Fatalf("agent self names no node")
	}
	for _, c := range []struct{ method, path, text string }{
		{http.MethodGet, "/v1/agent/self", deniedAnonymous("agent:read", agent)},
		{http.MethodGet, "/v1/agent/host", deniedAnonymous("operator:read", "")},
		{http.MethodPut, "/v1/agent/force-leave/" + agent + "-nobody", deniedAnonymous("operator:write", "")},
		{http.MethodPut, "/v1/agent/maintenance?enable=true", deniedAnonymous("node:write", agent)},
		{http.MethodGet, "/v1/operator/raft/configuration", deniedAnonymous("operator:read", "")},
		{http.MethodGet, "/v1/operator/autopilot/configuration", deniedAnonymous("operator:read", "")},
		{http.MethodDelete, "/v1/operator/raft/peer?id=nobody", deniedAnonymous("operator:write", "")},
		{http.MethodGet, "/v1/operator/keyring", deniedAnonymous("keyring:read", "")},
	} {
		t.expect(c.method+" "+c.path, t.DoAs("", c.method, c.path, nil), 403, c.text)
	}
	t.expect("maintenance without enable is 400 first", t.DoAs("", http.MethodPut, "/v1/agent/maintenance", nil), 400, "Missing value for enable")
	t.expect("status leader is open", t.DoAs("", http.MethodGet, "/v1/status/leader", nil), 200, "")
	t.expect("status peers is open", t.DoAs("", http.MethodGet, "/v1/status/peers", nil), 200, "")
	r := t.DoAs("", http.MethodGet, "/v1/agent/members", nil)
	if t.expect("anonymous members", r, 200, "[]") {
		t.Equal("anonymous is not told", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "")
	}
	reader, _ := t.CreateToken(t.policyName("agent-read", rulesJSON(map[string]any{"agent": named(agent, "read")})))
	t.expect("agent:read reads self", t.DoAs(reader, http.MethodGet, "/v1/agent/self", nil), 200, "")
}

// agentRegisterResolvesTokenEarly: an agent check or service register
// refuses what Consul checks before the token (a check's name and status,
// a service's name) whatever the token, then an unknown token, then the
// rest of a bad definition and a check's unknown service, then a token
// without the permission; a refused register registers nothing.
func agentRegisterResolvesTokenEarly(t *caseT) {
	const unknown = "00000000-1111-2222-3333-444444444444"
	name, svc := t.ServiceName("chk"), t.ServiceName("nosvc")
	badWeights := map[string]any{"Name": svc, "Weights": map[string]any{"Passing": -1, "Warning": 1}}
	for _, c := range []struct {
		what, token, path string
		body              map[string]any
		code              int
		text              string
	}{
		{"check without a name, unknown token", unknown, "check", map[string]any{"TTL": "10s"}, 400, "Missing check name"},
		{"check with a bad status, unknown token", unknown, "check", map[string]any{"Name": name, "TTL": "10s", "Status": "ok"}, 400, "Bad check status"},
		{"check without a type, unknown token", unknown, "check", map[string]any{"Name": name}, 403, "ACL not found"},
		{"check of an unknown service, unknown token", unknown, "check", map[string]any{"Name": name, "TTL": "10s", "ServiceID": svc}, 403, "ACL not found"},
		{"check without a type, anonymous", "", "check", map[string]any{"Name": name}, 400, "Invalid check: TTL must be > 0 for TTL checks"},
		{"check of an unknown service, anonymous", "", "check", map[string]any{"Name": name, "TTL": "10s", "ServiceID": svc}, 404, `ServiceID "` + svc + `" does not exist`},
		{"service without a name, unknown token", unknown, "service", map[string]any{"Port": 1}, 400, "Missing service name"},
		{"service with bad weights, unknown token", unknown, "service", badWeights, 403, "ACL not found"},
		{"service with bad weights, anonymous", "", "service", badWeights, 400, "Invalid Weights: Passing must be greater than 0"},
	} {
		t.expect(c.what, t.DoAs(c.token, http.MethodPut, "/v1/agent/"+c.path+"/register", mustJSON(c.body)), c.code, c.text)
	}
	for _, list := range []string{"checks", "services"} {
		r := t.Do(http.MethodGet, "/v1/agent/"+list, nil)
		if t.expect("agent "+list, r, 200, "") {
			t.Check(!strings.Contains(r.Text(), name) && !strings.Contains(r.Text(), svc), "a refused register shows in /v1/agent/%s: %s", list, r.Text())
		}
	}
}

// txnDeniedOpRefusesAll: a txn with one denied op answers 409 naming it
// and applies nothing; a read-only txn drops unreadable results and says
// so in its body.
func txnDeniedOpRefusesAll(t *caseT) {
	ok, no := t.Key("ok/"), t.Key("no")
	t.Set(no, "v")
	secret, acc := t.CreateToken(t.policyName("kv", rulesJSON(map[string]any{"key_prefix": named(ok, "write")})))
	body := mustJSON([]any{
		map[string]any{"KV": map[string]any{"Verb": "set", "Key": ok + "a", "Value": "eA=="}},
		map[string]any{"KV": map[string]any{"Verb": "set", "Key": no, "Value": "eA=="}},
	})
	r := t.DoAs(secret, http.MethodPut, "/v1/txn", body)
	if t.expect("txn with a denied op", r, 409, "") {
		var out struct {
			Results []any
			Errors  []struct {
				OpIndex int
				What    string
			}
		}
		t.decode("txn errors", r, &out)
		if t.Equal("errors", len(out.Errors), 1) {
			t.Equal("op index", out.Errors[0].OpIndex, 1)
			t.Equal("what", out.Errors[0].What, denied(acc, "key:write", no))
		}
	}
	t.expect("the allowed op was not applied", t.GetRaw(ok+"a", ""), 404, "")
	r = t.DoAs(secret, http.MethodPut, "/v1/txn", mustJSON([]any{
		map[string]any{"KV": map[string]any{"Verb": "get", "Key": no}}}))
	if t.expect("read txn", r, 200, "") {
		var out struct {
			Results               []any
			ResultsFilteredByACLs bool
		}
		t.decode("read txn", r, &out)
		t.Equal("results", len(out.Results), 0)
		t.Equal("ResultsFilteredByACLs", out.ResultsFilteredByACLs, true)
	}
	r = t.DoAs(secret, http.MethodPut, "/v1/txn", mustJSON([]any{
		map[string]any{"KV": map[string]any{"Verb": "check-index", "Key": no, "Index": 1}}}))
	t.expect("check-index needs key:read", r, 409, "")
	t.Check(strings.Contains(r.Text(), "lacks permission 'key:read'"), "check-index refusal: %s", r)
}

// preparedQueriesByName: query rules govern named queries; tokens are
// hidden from all but management.
func preparedQueriesByName(t *caseT) {
	svc := t.ServiceName("svc")
	name := t.ServiceName("q")
	r := t.DoJSON(http.MethodPost, "/v1/query", map[string]any{"Name": name, "Token": "tok", "Service": map[string]any{"Service": svc}})
	if !t.expect("create query", r, 200, "") {
		return
	}
	var created struct{ ID string }
	t.decode("create query", r, &created)
	t.deleteLater("/v1/query/" + created.ID)
	reader, _ := t.CreateToken(t.policyName("q-read", rulesJSON(map[string]any{"query": named(name, "read")})))
	r = t.DoAs(reader, http.MethodGet, "/v1/query/"+created.ID, nil)
	if t.expect("reader gets it", r, 200, "") {
		var qs []struct{ Name, Token string }
		t.decode("query", r, &qs)
		if t.Equal("queries", len(qs), 1) {
			t.Equal("token hidden", qs[0].Token, "<hidden>")
		}
	}
	t.expect("anonymous get", t.DoAs("", http.MethodGet, "/v1/query/"+created.ID, nil), 403, "Permission denied")
	t.expect("anonymous update", t.DoAs("", http.MethodPut, "/v1/query/"+created.ID,
		mustJSON(map[string]any{"Name": name, "Service": map[string]any{"Service": svc}})), 403, deniedAnonymous("query:write", name))
	t.expect("anonymous create", t.DoAs("", http.MethodPost, "/v1/query",
		mustJSON(map[string]any{"Name": name + "-2", "Service": map[string]any{"Service": svc}})), 403, deniedAnonymous("query:write", name+"-2"))
	var mine []struct{ Token string }
	t.decode("management get", t.Do(http.MethodGet, "/v1/query/"+created.ID, nil), &mine)
	if t.Equal("management sees one", len(mine), 1) {
		t.Equal("management sees the token", mine[0].Token, "tok")
	}
}

// txnServiceOpOnStoredService: tenure decides a txn service op on the
// service stored under its ID too, so naming another service does not
// delete it (S91).
func txnServiceOpOnStoredService(t *caseT) {
	node := t.HomeNode()
	web, db := t.ServiceName("web"), t.ServiceName("db")
	t.RegisterService(node, "db1", db, nil)
	writer, acc := t.CreateToken(t.policyName("web", rulesJSON(map[string]any{"service": named(web, "write")})))
	r := t.DoAs(writer, http.MethodPut, "/v1/txn", mustJSON([]any{map[string]any{"Service": map[string]any{
		"Verb": "delete", "Node": node, "Service": map[string]any{"ID": "db1", "Service": web}}}}))
	if t.expect("delete db1 under web's name", r, 409, "") {
		var out struct{ Errors []struct{ What string } }
		t.decode("refusal", r, &out)
		if t.Equal("errors", len(out.Errors), 1) {
			t.Equal("what", out.Errors[0].What, denied(acc, "service:write", db))
		}
	}
	var nodes []struct{ ServiceID string }
	t.decode("db instances", t.Do(http.MethodGet, "/v1/catalog/service/"+url.PathEscape(db), nil), &nodes)
	t.Equal("db1 survives", len(nodes), 1)
}
