package conformance

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Prepared queries: S57-S60.

func queryCases() []Case {
	return []Case{
		{clause: "S57", name: "refused-writes-change-nothing", run: s57Refused},
		{clause: "S57", name: "update-replaces-keeps-createindex", run: s57Update},
		{clause: "S58", name: "queries-deleted-with-their-session", run: s58Deleted},
		{clause: "S58", name: "service-deregistration-deletes-bound-queries", run: s58ServiceDereg},
		{clause: "S59", name: "execute-filters-health-tags-meta", run: s59Execute},
		{clause: "S60", name: "refusals-answer-500-with-reason", run: s60Status},
		{clause: "S83", name: "template-resolves-names-by-prefix", run: s83Template},
	}
}

// s83Template: a template answers the names it prefixes, its fields
// rendered for the name (match groups of its regexp here), is refused with
// a bad type, and is not run by its ID.
func s83Template(t *caseT) {
	n := t.RegisterNode("n")
	web := t.ServiceName("web")
	t.RegisterService(n, "web-1", web, nil)
	prefix := t.ServiceName("tq") + "-"
	id := t.CreateQuery(map[string]any{"Name": prefix,
		"Template": map[string]any{"Type": "name_prefix_match", "Regexp": "^" + regexp.QuoteMeta(prefix) + "(.*)$"},
		"Service":  map[string]any{"Service": "${match(1)}"}})
	t.Equal("execute "+prefix+web, t.Execute(prefix+web), []string{n})
	r := t.Do(http.MethodGet, "/v1/query/"+url.PathEscape(prefix+web)+"/explain", nil)
	t.Require(r.Code == 200, "explain %s: want 200, got %s", prefix+web, r)
	var ex struct {
		Query struct {
			ID       string
			Template struct{ Type string }
			Service  struct{ Service string }
		}
	}
	t.decode("explain", r, &ex)
	t.Equal("explained query", ex.Query.ID, id)
	t.Equal("explained service", ex.Query.Service.Service, web)
	t.Equal("explained template type", ex.Query.Template.Type, "name_prefix_match")
	if q := t.Query(id); t.Check(q != nil, "template %s not found", id) {
		t.Equal("stored service", q.Service.Service, "${match(1)}")
	}
	t.refusedQuery("a template of an unknown type", t.CreateQueryRaw(map[string]any{"Name": t.ServiceName("bad-"),
		"Template": map[string]any{"Type": "prefix"}, "Service": map[string]any{"Service": web}}), "Bad Template.Type 'prefix'")
	t.refusedQuery("a template run by its ID", t.Do(http.MethodGet, "/v1/query/"+id+"/execute", nil),
		"prepared query templates can only be resolved up by name, not by ID")
}

// refusedQuery checks a refused query write: a rejection whose reason
// contains want.
func (t *caseT) refusedQuery(what string, r *resp, want string) {
	t.Check(r.Code >= 400, "%s: want a rejection, got %s", what, r)
	t.Check(strings.Contains(r.Text(), want), "%s: reason %q lacks %q", what, r.Text(), want)
}

// queryNames lists the names of every stored query.
func (t *caseT) queryNames() []string {
	r := t.Do(http.MethodGet, "/v1/query", nil)
	if r.Code != 200 {
		t.Fatalf("query list: want 200, got %s", r)
	}
	var qs []queryDef
	t.decode("query list", r, &qs)
	var out []string
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out
}

func s57Refused(t *caseT) {
	web := t.ServiceName("web")
	taken := t.ServiceName("taken")
	id := t.CreateQuery(map[string]any{"Name": taken, "Service": map[string]any{"Service": web}})
	fresh := t.ServiceName("fresh")
	for _, tc := range []struct {
		what string
		def  map[string]any
		want string
	}{
		{"no Name and no Session", map[string]any{"Service": map[string]any{"Service": web}}, "Must be bound to a session"},
		{"no service", map[string]any{"Name": fresh}, "Must provide a Service name to query"},
		{"redacted token", map[string]any{"Name": fresh, "Token": "<hidden>", "Service": map[string]any{"Service": web}}, "redacted token"},
		{"negative NearestN", map[string]any{"Name": fresh, "Service": map[string]any{"Service": web, "Failover": map[string]any{"NearestN": -1}}}, "Bad NearestN '-1', must be >= 0"},
		{"bad DNS TTL", map[string]any{"Name": fresh, "Service": map[string]any{"Service": web}, "DNS": map[string]any{"TTL": "soon"}}, "Bad DNS TTL 'soon'"},
		{"name taken, other case", map[string]any{"Name": strings.ToUpper(taken), "Service": map[string]any{"Service": web}}, "aliases an existing query name"},
		{"name is a query's ID", map[string]any{"Name": id, "Service": map[string]any{"Service": web}}, "aliases an existing query ID"},
		{"unknown session", map[string]any{"Name": fresh, "Session": fakeID(), "Service": map[string]any{"Service": web}}, "invalid session"},
	} {
		t.refusedQuery(tc.what, t.CreateQueryRaw(tc.def), tc.want)
	}
	for _, name := range t.queryNames() {
		t.Check(!strings.EqualFold(name, fresh) && (name != id), "a refused create stored query %q", name)
	}
	ghost := fakeID()
	r := t.DoJSON(http.MethodPut, "/v1/query/"+ghost, map[string]any{"Name": fresh, "Service": map[string]any{"Service": web}})
	t.refusedQuery("update of an unknown ID", r, fmt.Sprintf("Cannot modify non-existent prepared query: '%s'", ghost))
	t.refusedQuery("delete of an unknown ID", t.Do(http.MethodDelete, "/v1/query/"+ghost, nil),
		fmt.Sprintf("Cannot modify non-existent prepared query: '%s'", ghost))
	t.Check(t.Query(ghost) == nil, "a refused update created query %s", ghost)
	// A refused update leaves the query as it was.
	t.refusedQuery("update to no service", t.DoJSON(http.MethodPut, "/v1/query/"+id, map[string]any{"Name": taken}),
		"Must provide a Service name to query")
	if q := t.Query(id); t.Check(q != nil, "query %s gone after a refused update", id) {
		t.Equal("service after a refused update", q.Service.Service, web)
	}
}

func s57Update(t *caseT) {
	n := t.RegisterNode("n")
	sid := t.CreateSessionOn(n, nil, nil)
	web, api := t.ServiceName("web"), t.ServiceName("api")
	id := t.CreateQuery(map[string]any{"Name": t.ServiceName("q"), "Session": sid, "Service": map[string]any{"Service": web}})
	before := t.Query(id)
	t.Require(before != nil, "query %s not found after create", id)
	t.Equal("a new query's indexes", before.ModifyIndex, before.CreateIndex)
	// The update sends no Name: the whole definition is replaced, so the
	// query loses its name (it keeps the Session, which an unnamed query needs).
	r := t.DoJSON(http.MethodPut, "/v1/query/"+id, map[string]any{"Session": sid, "Service": map[string]any{"Service": api}})
	t.Check(r.Code == 200, "update: want 200, got %s", r)
	after := t.Query(id)
	t.Require(after != nil, "query %s gone after update", id)
	t.Equal("Name after a whole-definition update", after.Name, "")
	t.Equal("Service after update", after.Service.Service, api)
	t.Equal("CreateIndex after update", after.CreateIndex, before.CreateIndex)
	t.Check(after.ModifyIndex > before.ModifyIndex, "ModifyIndex %d did not move past %d", after.ModifyIndex, before.ModifyIndex)
}

// Invalidating a session deletes every query bound to it, named or not,
// whatever the trigger; a query bound to no session stays.
func s58Deleted(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"c", "passing"})
	web := t.ServiceName("web")
	svc := map[string]any{"Service": web}
	byCheck := t.CreateSessionOn(n, []string{"c"}, nil)
	byDestroy := t.CreateSessionOn(n, nil, nil)
	named := t.CreateQuery(map[string]any{"Name": t.ServiceName("named"), "Session": byCheck, "Service": svc})
	unnamed := t.CreateQuery(map[string]any{"Session": byCheck, "Service": svc})
	destroyed := t.CreateQuery(map[string]any{"Session": byDestroy, "Service": svc})
	free := t.CreateQuery(map[string]any{"Name": t.ServiceName("free"), "Service": svc})
	t.SetCheck(n, "c", "critical")
	t.Check(!t.Alive(byCheck), "session bound to c survived c going critical")
	t.Check(t.Query(named) == nil, "named query outlived its session")
	t.Check(t.Query(unnamed) == nil, "unnamed query outlived its session")
	t.Check(t.Query(destroyed) != nil, "a query of another session was deleted")
	t.Destroy(byDestroy)
	t.Check(t.Query(destroyed) == nil, "query outlived its destroyed session")
	t.Check(t.Query(free) != nil, "a query bound to no session was deleted")
}

// A session bound to a service's check dies when the service is
// deregistered, and its queries with it.
func s58ServiceDereg(t *caseT) {
	n := t.RegisterNode("n")
	web := t.ServiceName("web")
	t.RegisterService(n, "web-1", web, nil, checkSpec{"web-alive", "passing"})
	sid := t.CreateSession(map[string]any{"Node": n, "Checks": []string{}, "ServiceChecks": []map[string]any{{"ID": "web-alive"}}})
	q := t.CreateQuery(map[string]any{"Name": t.ServiceName("q"), "Session": sid, "Service": map[string]any{"Service": web}})
	t.DeregisterService(n, "web-1")
	t.Check(!t.Alive(sid), "session bound to the deregistered service's check survived")
	t.Check(t.Query(q) == nil, "query outlived its session")
}

// Execute returns the instances of the query's service (its name in any
// case) that carry its tags, have its ServiceMeta and no critical check,
// node checks included; OnlyPassing drops warnings; IgnoreCheckIDs skips.
func s59Execute(t *caseT) {
	web := t.ServiceName("web")
	reg := func(name string, nodeCheck, svcCheck string, tags []string, meta string) string {
		n := t.RegisterNode(name, checkSpec{"node-ok", nodeCheck})
		t.catalog("register", map[string]any{"Node": n, "Address": "127.0.0.1",
			"Service": map[string]any{"ID": "web-1", "Service": web, "Tags": tags, "Meta": map[string]string{"ver": meta}},
			"Check":   map[string]any{"Node": n, "CheckID": "web-alive", "Name": "web-alive", "Status": svcCheck, "ServiceID": "web-1"}})
		return n
	}
	n1 := reg("n1", "passing", "passing", []string{"Primary"}, "2")
	n2 := reg("n2", "passing", "warning", []string{"backup"}, "2")
	n3 := reg("n3", "passing", "critical", nil, "1")
	n4 := reg("n4", "critical", "passing", nil, "1")
	sorted := func(ns ...string) []string {
		out := slices.Clone(ns)
		slices.Sort(out)
		return out
	}
	query := func(name string, svc map[string]any) string {
		svc["Service"] = strings.ToUpper(web)
		return t.CreateQuery(map[string]any{"Name": t.ServiceName(name), "Service": svc})
	}
	plain := query("plain", map[string]any{})
	t.Equal("execute: no critical check, node checks included", t.Execute(plain), sorted(n1, n2))
	t.Equal("execute by name in another case", t.Execute(strings.ToUpper(t.ServiceName("plain"))), sorted(n1, n2))
	t.Equal("OnlyPassing", t.Execute(query("passing", map[string]any{"OnlyPassing": true})), sorted(n1))
	t.Equal("tag, ignoring case", t.Execute(query("tag", map[string]any{"Tags": []string{"primary"}})), sorted(n1))
	t.Equal("!tag", t.Execute(query("nottag", map[string]any{"Tags": []string{"!PRIMARY"}})), sorted(n2))
	t.Equal("IgnoreCheckIDs", t.Execute(query("ignore", map[string]any{"IgnoreCheckIDs": []string{"web-alive", "node-ok"}})), sorted(n1, n2, n3, n4))
	t.Equal("ServiceMeta", t.Execute(query("meta", map[string]any{"ServiceMeta": map[string]string{"ver": "1"}, "IgnoreCheckIDs": []string{"node-ok"}})), sorted(n4))
}

// Consul answers every refused prepared-query write 500 with its reason.
func s60Status(t *caseT) {
	web := t.ServiceName("web")
	for _, tc := range []struct {
		what string
		def  map[string]any
		want string
	}{
		{"no Name and no Session", map[string]any{"Service": map[string]any{"Service": web}}, "Invalid prepared query: Must be bound to a session"},
		{"no service", map[string]any{"Name": t.ServiceName("q")}, "Invalid prepared query: Must provide a Service name to query"},
		{"unknown session", map[string]any{"Name": t.ServiceName("q"), "Session": fakeID(), "Service": map[string]any{"Service": web}}, "invalid session"},
	} {
		r := t.CreateQueryRaw(tc.def)
		t.Check(r.Code == 500 && strings.Contains(r.Text(), tc.want), "%s: want 500 with %q, got %s", tc.what, tc.want, r)
	}
	ghost := fakeID()
	r := t.Do(http.MethodDelete, "/v1/query/"+ghost, nil)
	t.Check(r.Code == 500 && strings.Contains(r.Text(), "Cannot modify non-existent prepared query"), "delete of an unknown ID: want 500, got %s", r)
}
