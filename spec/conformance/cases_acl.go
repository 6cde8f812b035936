package conformance

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// ACL cases (S84-S88): run only by the ACL profiles, against a server with
// ACLs on, default_policy "deny" and -token a management token. Each case
// makes its own policies and tokens and speaks for them with DoAs.
func aclCases() []Case {
	acl := func(clause, name string, run func(t *caseT)) Case {
		return Case{clause: clause, name: name, acl: true, run: run}
	}
	return []Case{
		acl("S84", "rules-decide-exact-longest-prefix-merge-default", rulesDecide),
		acl("S85", "session-write-on-its-node", sessionWriteOnNode),
		acl("S85", "kv-needs-key-read-and-write", kvNeedsKeyPermissions),
		acl("S85", "listing-filtered-denials-change-nothing", listingFiltered),
		acl("S86", "token-sources-and-unknown-tokens", tokenSources),
		acl("S86", "agent-registration-written-with-its-token", registrationWrittenWithItsToken),
		acl("S87", "builtins-and-spent-bootstrap", builtinsAndBootstrap),
		acl("S87", "endpoints-need-acl-read-and-write", endpointsNeedACL),
		acl("S87", "token-policy-role-lifecycle", tokenPolicyRoleLifecycle),
		acl("S87", "refused-writes-change-nothing", refusedACLWrites),
		acl("S88", "refused-acl-write-400-no-log-entry", refusedACLWrite400),
	}
}

// authorization is one question to /v1/internal/acl/authorize and the
// answer the clause expects.
type authorization struct {
	resource, segment, access string
	allow                     bool
}

// rulesDecide: S84 asked through Consul's own question endpoint, for a
// token with two policies, one in HCL and one in JSON.
func rulesDecide(t *caseT) {
	p := t.Prefix()
	node := t.ACLName("node")
	hclRules := strings.Join([]string{
		`key_prefix "` + p + `" { policy = "read" }`,
		`key_prefix "` + p + `app/" { policy = "write" }`,
		`key_prefix "` + p + `app/secret/" { policy = "deny" }`,
		`key "` + p + `app/secret/open" { policy = "write" }`,
		`key "` + p + `app/" { policy = "deny" }`,
		`key_prefix "` + p + `l/" { policy = "list" }`,
		`key "` + p + `m" { policy = "read" }`,
		`node_prefix "` + node + `" { policy = "write" }`,
		`service "web" { policy = "read" }`,
		`operator = "write"`,
		`acl = "WRITE"`,
	}, "\n")
	jsonRules := rulesJSON(map[string]any{
		"key":         named(p+"m", "write"),
		"node_prefix": named(node, "deny"),
		"operator":    "read",
	})
	secret, _ := t.CreateToken(t.policyName("hcl", hclRules), t.policyName("json", jsonRules))
	cases := []authorization{
		{"key", p + "other", "read", true},              // the shortest prefix
		{"key", p + "other", "write", false},            // read only
		{"key", p + "app/x", "write", true},             // a longer prefix
		{"key", p + "app/", "read", false},              // exact beats the prefix of the same name
		{"key", p + "app/secret/x", "read", false},      // the longest prefix
		{"key", p + "app/secret/open", "write", true},   // exact beats every prefix
		{"key", p + "app/secret/opener", "read", false}, // an exact rule is no prefix
		{"key", p + "l/x", "list", true},
		{"key", p + "l/x", "write", false},
		{"key", p + "app/", "write-prefix", false}, // rules under it grant less
		{"key", p + "app/z/", "write-prefix", true},
		{"key", p + "m", "write", true}, // merged: write outranks read
		{"key", "conformance-nowhere/" + p, "read", false},
		{"node", node + "-1", "read", false}, // merged: deny outranks write
		{"operator", "", "write", true},      // merged: write outranks read
		{"mesh", "", "write", true},          // mesh falls back to operator
		{"intention", "web", "read", true},   // a service read implies it
		{"intention", "web", "write", false},
		{"acl", "", "read", false}, // "WRITE" never wins a merge
		{"session", node, "write", false},
	}
	var body []map[string]string
	for _, c := range cases {
		body = append(body, map[string]string{"Resource": c.resource, "Segment": c.segment, "Access": c.access})
	}
	b, _ := json.Marshal(body)
	r := t.DoAs(secret, http.MethodPost, "/v1/internal/acl/authorize", b)
	if !t.expect("authorize", r, 200, "") {
		return
	}
	var got []struct{ Allow bool }
	t.decode("authorize", r, &got)
	if len(got) != len(cases) {
		t.Fatalf("authorize answered %d decisions for %d questions", len(got), len(cases))
	}
	for i, c := range cases {
		if got[i].Allow != c.allow {
			t.Errorf("%s:%s on %q: allow=%v, want %v", c.resource, c.access, c.segment, got[i].Allow, c.allow)
		}
	}
}

// policyName creates a policy named after the case and returns its name.
func (t *caseT) policyName(name, rules string) string {
	n := t.ACLName(name)
	t.CreatePolicy(n, rules)
	return n
}

// sessionWriteOnNode: creating, destroying and renewing a session need
// session:write on its node; reads drop what session:read does not cover.
func sessionWriteOnNode(t *caseT) {
	node := t.HomeNode()
	writer, _ := t.CreateToken(t.policyName("own", rulesJSON(map[string]any{"session": named(node, "write")})))
	other, otherAcc := t.CreateToken(t.policyName("other", rulesJSON(map[string]any{"session": named(node+"-else", "write")})))
	body := []byte(`{"Node":"` + node + `","Checks":[],"LockDelay":"0s"}`)
	t.expect("create without session:write", t.DoAs(other, http.MethodPut, "/v1/session/create", body), 403,
		denied(otherAcc, "session:write", node))
	t.expect("anonymous create", t.DoAs("", http.MethodPut, "/v1/session/create", body), 403,
		deniedAnonymous("session:write", node))
	r := t.DoAs(writer, http.MethodPut, "/v1/session/create", body)
	if !t.expect("create with session:write", r, 200, "") {
		return
	}
	var out struct{ ID string }
	t.decode("create", r, &out)
	t.destroyLater(out.ID)
	t.expect("renew without session:write", t.DoAs(other, http.MethodPut, "/v1/session/renew/"+out.ID, nil), 403,
		denied(otherAcc, "session:write", node))
	t.expect("destroy without session:write", t.DoAs(other, http.MethodPut, "/v1/session/destroy/"+out.ID, nil), 403,
		denied(otherAcc, "session:write", node))
	r = t.DoAs(other, http.MethodGet, "/v1/session/info/"+out.ID, nil)
	t.expect("info without session:read", r, 200, "[]")
	t.Equal("filtered header", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "true")
	r = t.DoAs(writer, http.MethodGet, "/v1/session/info/"+out.ID, nil)
	var infos []struct{ ID string }
	t.decode("info", r, &infos)
	t.Equal("sessions the writer reads", len(infos), 1)
	t.expect("renew with session:write", t.DoAs(writer, http.MethodPut, "/v1/session/renew/"+out.ID, nil), 200, "")
	t.expect("destroy with session:write", t.DoAs(writer, http.MethodPut, "/v1/session/destroy/"+out.ID, nil), 200, "true")
}

// kvNeedsKeyPermissions: reads need key:read even of a missing key, every
// write key:write and nothing on the session, a recursive delete write on
// all the prefix holds.
func kvNeedsKeyPermissions(t *caseT) {
	ok, no, ro := t.Key("ok/"), t.Key("no/"), t.Key("ok/ro")
	secret, acc := t.CreateToken(t.policyName("kv", rulesJSON(map[string]any{
		"key_prefix": named(ok, "write"), "key": named(ro, "read"),
	})))
	t.expect("read of a missing key it may read", t.DoAs(secret, http.MethodGet, "/v1/kv/"+ok+"x", nil), 404, "")
	t.expect("read of a missing key it may not read", t.DoAs(secret, http.MethodGet, "/v1/kv/"+no+"x", nil), 403,
		denied(acc, "key:read", no+"x"))
	t.expect("write outside", t.DoAs(secret, http.MethodPut, "/v1/kv/"+no+"x", []byte("v")), 403,
		denied(acc, "key:write", no+"x"))
	if p, _ := t.Get(no + "x"); p != nil {
		t.Errorf("a denied write created %s", no+"x")
	}
	t.expect("write inside", t.DoAs(secret, http.MethodPut, "/v1/kv/"+ok+"x", []byte("v")), 200, "true")
	// The session is the run token's; the lock needs only key:write.
	sid := t.CreateSession(map[string]any{"Node": t.HomeNode(), "Checks": []string{}})
	t.expect("acquire", t.DoAs(secret, http.MethodPut, "/v1/kv/"+ok+"lock?acquire="+sid, []byte("v")), 200, "true")
	t.expect("release", t.DoAs(secret, http.MethodPut, "/v1/kv/"+ok+"lock?release="+sid, nil), 200, "true")
	t.expect("acquire of a read-only key", t.DoAs(secret, http.MethodPut, "/v1/kv/"+ro+"?acquire="+sid, nil), 403,
		denied(acc, "key:write", ro))
	t.expect("recursive delete over a read-only key", t.DoAs(secret, http.MethodDelete, "/v1/kv/"+ok+"?recurse", nil), 403, "")
	t.expect("recursive delete under it", t.DoAs(secret, http.MethodDelete, "/v1/kv/"+ok+"l?recurse", nil), 200, "true")
	t.expect("delete", t.DoAs(secret, http.MethodDelete, "/v1/kv/"+ok+"x", nil), 200, "true")
}

// listingFiltered: a listing keeps what the token reads and says so; the
// anonymous token is not told; a denied write moves no index.
func listingFiltered(t *caseT) {
	a, b := t.Key("a/1"), t.Key("b/1")
	t.Set(a, "x")
	t.Set(b, "y")
	secret, _ := t.CreateToken(t.policyName("read-a", rulesJSON(map[string]any{"key_prefix": named(t.Key("a/"), "read")})))
	r := t.DoAs(secret, http.MethodGet, "/v1/kv/"+t.Prefix()+"?recurse", nil)
	var entries []struct{ Key string }
	t.decode("recurse", r, &entries)
	if t.Equal("entries", len(entries), 1) {
		t.Equal("entry", entries[0].Key, a)
	}
	t.Equal("filtered header", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "true")
	r = t.DoAs(secret, http.MethodGet, "/v1/kv/"+t.Prefix()+"?keys", nil)
	var keys []string
	t.decode("keys", r, &keys)
	t.Equal("keys", keys, []string{a})
	r = t.DoAs("", http.MethodGet, "/v1/kv/"+t.Prefix()+"?recurse", nil)
	t.expect("anonymous recurse", r, 404, "")
	t.Equal("anonymous is not told", r.Header.Get("X-Consul-Results-Filtered-By-ACLs"), "")
	before := t.GetRaw(t.Prefix(), "recurse").Index()
	t.expect("denied write", t.DoAs(secret, http.MethodPut, "/v1/kv/"+b, []byte("z")), 403, "")
	if after := t.GetRaw(t.Prefix(), "recurse").Index(); after != before {
		t.Errorf("a denied write moved the prefix index from %d to %d", before, after)
	}
}

// registrationWrittenWithItsToken: a service registered on the agent with
// a token that may write that service alone, and a node check registered
// with a token that may write the agent's node alone, both reach the
// catalog: anti-entropy writes each with the token it was registered
// with, not with an agent token (the suite's agents have none that could
// write them) nor the default one.
func registrationWrittenWithItsToken(t *caseT) {
	node := t.AgentNode()
	svc, chk := t.ServiceName("tok"), t.ServiceName("tok-check")
	svcTok, _ := t.CreateToken(t.policyName("svc", rulesJSON(map[string]any{"service": named(svc, "write")})))
	nodeTok, _ := t.CreateToken(t.policyName("node", rulesJSON(map[string]any{"node": named(node, "write")})))
	t.agentCleanup("/v1/agent/service/deregister/" + url.PathEscape(svc))
	t.agentCleanup("/v1/agent/check/deregister/" + url.PathEscape(chk))
	t.expect("register the service with its token", t.DoAs(svcTok, http.MethodPut, "/v1/agent/service/register",
		mustJSON(map[string]any{"ID": svc, "Name": svc})), 200, "")
	t.expect("register the node check with its token", t.DoAs(nodeTok, http.MethodPut, "/v1/agent/check/register",
		mustJSON(map[string]any{"ID": chk, "Name": chk, "TTL": "1h"})), 200, "")
	t.WaitFor("the service and the check in the catalog", 5*time.Second, 100*time.Millisecond, func() bool {
		r := t.Do(http.MethodGet, "/v1/catalog/service/"+url.PathEscape(svc), nil)
		var nodes []struct{ Node, ServiceID string }
		if r.Code != 200 || json.Unmarshal(r.Body, &nodes) != nil || len(nodes) != 1 || nodes[0].Node != node {
			return false
		}
		return t.CatalogCheckStatus(node, chk) != ""
	})
}

// tokenSources: ?token, X-Consul-Token, Authorization: Bearer, in that
// order; unknown secrets and root names; the default-policy header.
func tokenSources(t *caseT) {
	k := t.Key("k")
	t.Set(k, "v")
	reader, _ := t.CreateToken(t.policyName("read", rulesJSON(map[string]any{"key": named(k, "read")})))
	path := "/v1/kv/" + k
	for _, c := range []struct {
		what  string
		query string
		hdr   http.Header
		code  int
	}{
		{"?token", "?token=" + url.QueryEscape(reader), nil, 200},
		{"?token over the header", "?token=" + url.QueryEscape(reader), http.Header{"X-Consul-Token": {"anonymous"}}, 200},
		{"an empty ?token falls through", "?token=", http.Header{"X-Consul-Token": {reader}}, 200},
		{"X-Consul-Token", "", http.Header{"X-Consul-Token": {reader}}, 200},
		{"the header over Bearer", "", http.Header{"X-Consul-Token": {"anonymous"}, "Authorization": {"Bearer " + reader}}, 403},
		{"Bearer, any case, first word", "", http.Header{"Authorization": {"bEaReR " + reader + " more"}}, 200},
		{"Basic is no token", "", http.Header{"Authorization": {"Basic " + reader}}, 403},
	} {
		r := t.DoHeaders(c.hdr, http.MethodGet, path+c.query, nil)
		if r.Code != c.code {
			t.Errorf("%s: got %s, want %d", c.what, r, c.code)
		}
	}
	r := t.DoAs("00000000-1111-2222-3333-444444444444", http.MethodGet, path, nil)
	t.expect("unknown secret", r, 403, "ACL not found")
	t.Equal("default-policy header", r.Header.Get("X-Consul-Default-ACL-Policy"), "deny")
	t.expect("root name", t.DoAs("manage", http.MethodGet, path, nil), 500, "Cannot resolve root ACL")
	t.Equal("default-policy header on success", t.DoAs(reader, http.MethodGet, path, nil).Header.Get("X-Consul-Default-ACL-Policy"), "deny")
}

// bootstrapSpent matches the refusal of a second bootstrap.
var bootstrapSpent = regexp.MustCompile(`^Permission denied: ACL bootstrap no longer allowed \(reset index: [1-9][0-9]*\)$`)

// builtinsAndBootstrap: the builtin records, and a bootstrap already spent.
func builtinsAndBootstrap(t *caseT) {
	var pol struct{ ID, Name, Description, Rules string }
	t.decode("global-management", t.Do(http.MethodGet, "/v1/acl/policy/00000000-0000-0000-0000-000000000001", nil), &pol)
	t.Equal("global-management name", pol.Name, "global-management")
	t.Check(strings.Contains(pol.Rules, `acl = "write"`), "global-management rules %q lack acl write", pol.Rules)
	r := t.Do(http.MethodGet, "/v1/acl/policy/name/builtin/global-read-only", nil)
	if t.expect("global-read-only", r, 200, "") {
		t.decode("global-read-only", r, &pol)
		t.Equal("global-read-only ID", pol.ID, "00000000-0000-0000-0000-000000000002")
	}
	var anon struct {
		AccessorID, SecretID, Description string
		Policies                          []any
	}
	t.decode("anonymous", t.Do(http.MethodGet, "/v1/acl/token/00000000-0000-0000-0000-000000000002", nil), &anon)
	t.Equal("anonymous secret", anon.SecretID, "anonymous")
	t.Equal("anonymous description", anon.Description, "Anonymous Token")
	r = t.DoAs("", http.MethodPut, "/v1/acl/bootstrap", nil)
	t.Check(r.Code == 403 && bootstrapSpent.MatchString(r.Text()), "second bootstrap: %s", r)
	t.refused("builtin policy delete", t.Do(http.MethodDelete, "/v1/acl/policy/00000000-0000-0000-0000-000000000001", nil),
		"Delete operation not permitted on the builtin global-management policy")
	t.refused("anonymous token delete", t.Do(http.MethodDelete, "/v1/acl/token/00000000-0000-0000-0000-000000000002", nil),
		"Delete operation not permitted on the anonymous token")
}

// endpointsNeedACL: reads need acl:read, writes acl:write, a token reads
// itself, secrets are hidden without acl:write.
func endpointsNeedACL(t *caseT) {
	t.expect("anonymous token list", t.DoAs("", http.MethodGet, "/v1/acl/tokens", nil), 403, deniedAnonymous("acl:read", ""))
	reader, readerAcc := t.CreateToken(t.policyName("acl-read", `acl = "read"`))
	r := t.DoAs(reader, http.MethodGet, "/v1/acl/tokens", nil)
	if t.expect("reader lists tokens", r, 200, "") {
		var list []struct{ AccessorID, SecretID string }
		t.decode("tokens", r, &list)
		for _, tok := range list {
			t.Check(tok.SecretID == "<hidden>", "a reader sees token %s's secret", tok.AccessorID)
		}
	}
	t.expect("reader lists policies", t.DoAs(reader, http.MethodGet, "/v1/acl/policies", nil), 200, "")
	t.expect("reader writes a policy", t.DoAs(reader, http.MethodPut, "/v1/acl/policy", []byte(`{"Name":"`+t.ACLName("x")+`"}`)), 403,
		denied(readerAcc, "acl:write", ""))
	var self struct{ AccessorID, SecretID string }
	t.decode("self", t.DoAs(reader, http.MethodGet, "/v1/acl/token/self", nil), &self)
	t.Equal("self", self, struct{ AccessorID, SecretID string }{readerAcc, reader})
	plain, _ := t.CreateToken(t.policyName("none", `key "nothing" { policy = "read" }`))
	t.expect("a token without acl:read reads itself", t.DoAs(plain, http.MethodGet, "/v1/acl/token/self", nil), 200, "")
}

// tokenPolicyRoleLifecycle: the shapes consul/api reads, links by ID and by
// name (repeats dropped), update, clone, delete.
func tokenPolicyRoleLifecycle(t *caseT) {
	pname := t.ACLName("pol")
	r := t.DoJSON(http.MethodPut, "/v1/acl/policy", map[string]any{"Name": pname, "Description": "d",
		"Rules": `node_prefix "" { policy = "read" }`, "Datacenters": []string{"dc1"}})
	if !t.expect("create policy", r, 200, "") {
		return
	}
	var pol map[string]any
	t.decode("policy", r, &pol)
	pid, _ := pol["ID"].(string)
	t.deleteLater("/v1/acl/policy/" + pid)
	for _, f := range []string{"ID", "Name", "Description", "Rules", "Datacenters", "Hash", "CreateIndex", "ModifyIndex"} {
		t.Check(pol[f] != nil, "policy has no %s: %s", f, r)
	}
	t.Equal("policy by name", t.Do(http.MethodGet, "/v1/acl/policy/name/"+pname, nil).Text(), r.Text())
	pol["Rules"] = pol["Rules"].(string) + "\nservice_prefix \"\" { policy = \"read\" }"
	r = t.DoJSON(http.MethodPut, "/v1/acl/policy/"+pid, pol)
	var upd map[string]any
	t.decode("policy update", r, &upd)
	t.Equal("update keeps CreateIndex", upd["CreateIndex"], pol["CreateIndex"])
	t.Check(upd["ModifyIndex"].(float64) > pol["ModifyIndex"].(float64), "update did not move ModifyIndex: %s", r)

	rname := t.ACLName("role")
	r = t.DoJSON(http.MethodPut, "/v1/acl/role", map[string]any{"Name": rname, "Policies": []map[string]string{{"Name": pname}}})
	var role struct {
		ID       string
		Policies []struct{ ID, Name string }
	}
	t.decode("role", r, &role)
	t.deleteLater("/v1/acl/role/" + role.ID)
	t.Equal("role links", role.Policies, []struct{ ID, Name string }{{pid, pname}})

	r = t.DoJSON(http.MethodPut, "/v1/acl/token", map[string]any{"Description": "life",
		"Policies": []map[string]string{{"ID": pid}, {"Name": pname}}, "Roles": []map[string]string{{"Name": rname}}})
	if !t.expect("create token", r, 200, "") {
		return
	}
	var tok map[string]any
	t.decode("token", r, &tok)
	acc, _ := tok["AccessorID"].(string)
	t.deleteLater("/v1/acl/token/" + acc)
	for _, f := range []string{"AccessorID", "SecretID", "Description", "Policies", "Roles", "Local", "CreateTime", "Hash", "CreateIndex", "ModifyIndex"} {
		t.Check(tok[f] != nil, "token has no %s: %s", f, r)
	}
	t.Equal("links by ID and name are one", len(tok["Policies"].([]any)), 1)
	t.Equal("token read", t.Do(http.MethodGet, "/v1/acl/token/"+acc, nil).Text(), r.Text())
	tok["Description"] = "updated"
	r = t.DoJSON(http.MethodPut, "/v1/acl/token/"+acc, tok)
	var updTok map[string]any
	t.decode("token update", r, &updTok)
	t.Equal("update", updTok["Description"], "updated")
	t.Equal("update keeps the secret", updTok["SecretID"], tok["SecretID"])
	r = t.DoJSON(http.MethodPut, "/v1/acl/token/"+acc+"/clone", map[string]string{"Description": "clone"})
	var clone map[string]any
	t.decode("clone", r, &clone)
	cloneAcc, _ := clone["AccessorID"].(string)
	t.deleteLater("/v1/acl/token/" + cloneAcc)
	t.Check(cloneAcc != acc && clone["SecretID"] != tok["SecretID"], "clone kept the IDs: %s", r)
	t.Equal("clone links", clone["Roles"], tok["Roles"])
	t.expect("delete token", t.Do(http.MethodDelete, "/v1/acl/token/"+acc, nil), 200, "true")
	t.expect("read deleted token", t.Do(http.MethodGet, "/v1/acl/token/"+acc, nil), 403, "token does not exist: ACL not found")
	t.expect("delete role", t.Do(http.MethodDelete, "/v1/acl/role/"+role.ID, nil), 200, "true")
	t.expect("delete policy", t.Do(http.MethodDelete, "/v1/acl/policy/"+pid, nil), 200, "true")
	t.expect("delete it again", t.Do(http.MethodDelete, "/v1/acl/policy/"+pid, nil), 404, "Cannot find policy to delete")
	t.expect("read a missing policy", t.Do(http.MethodGet, "/v1/acl/policy/name/"+pname, nil), 404, "Requested policy does not exist: ACL not found")
}

// refusedACLWrites: malformed or conflicting writes are refused with
// Consul's reason and change nothing.
func refusedACLWrites(t *caseT) {
	taken := t.policyName("taken", "")
	for _, c := range []struct{ what, name, rules, want string }{
		{"an unknown level", "bad1", `key_prefix "a/" { policy = "wrte" }`,
			`Invalid key_prefix policy: &acl.KeyRule{Prefix:"a/", Policy:"wrte", EnterpriseRule:acl.EnterpriseRule{}}`},
		{"rules that do not parse", "bad2", `key_prefix "a/" { policy = `,
			`Failed to parse ACL rules: At 1:29: object expected closing RBRACE got: EOF`},
		{"an argument set twice", "bad3", "acl = \"read\"\nacl = \"write\"",
			`Failed to parse ACL rules: The argument "acl" at 2:1 was already set. Each argument can only be defined once`},
		{"list on a node", "bad4", `node_prefix "" { policy = "list" }`,
			`Invalid node_prefix policy: &acl.NodeRule{Name:"", Policy:"list", EnterpriseRule:acl.EnterpriseRule{}}`},
	} {
		name := t.ACLName(c.name)
		t.refused(c.what, t.DoJSON(http.MethodPut, "/v1/acl/policy", map[string]string{"Name": name, "Rules": c.rules}), c.want)
		t.expect(c.what+" left no policy", t.Do(http.MethodGet, "/v1/acl/policy/name/"+name, nil), 404, "")
	}
	t.refused("a name in use", t.DoJSON(http.MethodPut, "/v1/acl/policy", map[string]string{"Name": strings.ToUpper(taken)}),
		`Invalid Policy: A Policy with Name "`+strings.ToUpper(taken)+`" already exists`)
	missing := t.ACLName("missing")
	desc := t.ACLName("refused-token")
	t.refused("a link to no policy", t.DoJSON(http.MethodPut, "/v1/acl/token", map[string]any{"Description": desc,
		"Policies": []map[string]string{{"Name": missing}}}), `No such ACL policy with name "`+missing+`"`)
	// The tables are shared with the cases running beside this one, so
	// "nothing changed" is checked as "nothing of this case's appeared".
	t.Check(!strings.Contains(t.Do(http.MethodGet, "/v1/acl/tokens", nil).Text(), desc), "a refused token write left a token")
}

// refusedACLWrite400: tenure answers a refused ACL write 400 (S88). That
// it takes no log entry is not visible to a client (a refused entry moves
// no table index); impl/internal/httpapi's tests count applies.
func refusedACLWrite400(t *caseT) {
	name := t.ACLName("bad")
	r := t.DoJSON(http.MethodPut, "/v1/acl/policy", map[string]string{"Name": name, "Rules": `key "k" { policy = "all" }`})
	t.expect("refused write", r, 400, `Invalid key policy: &acl.KeyRule{Prefix:"k", Policy:"all", EnterpriseRule:acl.EnterpriseRule{}}`)
	t.expect("refused write left no policy", t.Do(http.MethodGet, "/v1/acl/policy/name/"+name, nil), 404, "")
	t.expect("reused secret", t.DoJSON(http.MethodPut, "/v1/acl/token", map[string]string{"SecretID": t.env.token}), 400,
		"Invalid Token: SecretID is already in use")
}
