package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

const post = http.MethodPost

// Prepared queries through the official client: create, read, list,
// update, execute, explain, delete (S57, S59).
func TestPreparedQueryLifecycle(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", []string{"primary"}, "passing")
	f.registerWeb("n2", "10.0.0.2", []string{"backup"}, "warning")
	f.registerWeb("n3", "10.0.0.3", nil, "critical")
	pq := f.client.PreparedQuery()
	def := &api.PreparedQueryDefinition{Name: "web-q", Service: api.ServiceQuery{Service: "web"}, DNS: api.QueryDNSOptions{TTL: "10s"}}
	id, _, err := pq.Create(def, nil)
	if err != nil || id == "" {
		t.Fatalf("create: %q %v", id, err)
	}
	got, meta, err := pq.Get(id, nil)
	if err != nil || len(got) != 1 || got[0].ID != id || got[0].Name != "web-q" || got[0].DNS.TTL != "10s" || meta.LastIndex == 0 {
		t.Fatalf("get %s: %+v %v", id, got, err)
	}
	createIndex := meta.LastIndex
	if list, _, err := pq.List(nil); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list: %+v %v", list, err)
	}
	nodes := func(idOrName string) []string {
		t.Helper()
		res, _, err := pq.Execute(idOrName, nil)
		if err != nil {
			t.Fatalf("execute %s: %v", idOrName, err)
		}
		var out []string
		for _, n := range res.Nodes {
			out = append(out, n.Node.Node)
		}
		slices.Sort(out) // execute shuffles, as Consul does
		return out
	}
	// A critical check drops n3; the warning n2 stays (S59). The name
	// resolves ignoring case.
	if got := nodes(id); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("execute by ID: %v", got)
	}
	if got := nodes("WEB-Q"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("execute by name: %v", got)
	}
	r := f.do(http.MethodGet, "/v1/query/"+id+"/execute?limit=1", nil)
	want(t, "execute ?limit=1", r, http.StatusOK, "")
	if res := decode[api.PreparedQueryExecuteResponse](t, r); len(res.Nodes) != 1 || res.Service != "web" || res.DNS.TTL != "10s" || res.Datacenter != "dc1" {
		t.Fatalf("execute ?limit=1: %s", r.text())
	}
	// An update replaces the whole definition and keeps CreateIndex.
	def.ID = id
	def.Service = api.ServiceQuery{Service: "web", OnlyPassing: true, Tags: []string{"!backup"}}
	def.DNS = api.QueryDNSOptions{}
	if _, err := pq.Update(def, nil); err != nil {
		t.Fatalf("update: %v", err)
	}
	type indexes struct{ CreateIndex, ModifyIndex uint64 }
	created := decode[[]indexes](t, f.do(http.MethodGet, "/v1/query/"+id, nil))
	after, _, _ := pq.Get(id, nil)
	if len(after) != 1 || after[0].DNS.TTL != "" || len(created) != 1 || created[0].CreateIndex != createIndex || created[0].ModifyIndex <= createIndex {
		t.Fatalf("after update: %+v %+v", after, created)
	}
	if got := nodes(id); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("execute after update: %v", got)
	}
	r = f.do(http.MethodGet, "/v1/query/web-q/explain", nil)
	want(t, "explain", r, http.StatusOK, "")
	if ex := decode[struct{ Query api.PreparedQueryDefinition }](t, r); ex.Query.ID != id || !ex.Query.Service.OnlyPassing {
		t.Fatalf("explain: %s", r.text())
	}
	if _, err := pq.Delete(id, nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	want(t, "get deleted", f.do(http.MethodGet, "/v1/query/"+id, nil), http.StatusNotFound, "Query not found")
	want(t, "execute deleted", f.do(http.MethodGet, "/v1/query/"+id+"/execute", nil), http.StatusNotFound, "Query not found")
	if list, _, _ := pq.List(nil); list == nil || len(list) != 0 {
		t.Fatalf("list after delete: %#v, want []", list)
	}
}

// A query bound to a session dies with it, named or not (S58).
func TestPreparedQueryDeletedWithSession(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", nil, "passing")
	sid := f.session(&api.SessionEntry{Node: "n1", NodeChecks: []string{"web-alive"}})
	pq := f.client.PreparedQuery()
	named, _, err := pq.Create(&api.PreparedQueryDefinition{Name: "bound", Session: sid, Service: api.ServiceQuery{Service: "web"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	unnamed, _, err := pq.Create(&api.PreparedQueryDefinition{Session: sid, Service: api.ServiceQuery{Service: "web"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	free, _, err := pq.Create(&api.PreparedQueryDefinition{Name: "free", Service: api.ServiceQuery{Service: "web"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "web-alive critical", f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{
		"Node": "n1", "Address": "10.0.0.1", "Check": map[string]any{"CheckID": "web-alive", "Status": "critical", "ServiceID": "web-n1"},
	}), http.StatusOK, "true")
	list, _, _ := pq.List(nil)
	if len(list) != 1 || list[0].ID != free {
		t.Fatalf("queries after the session died: %+v (named %s, unnamed %s)", list, named, unnamed)
	}
}

// Refused writes answer a status and Consul's reason and change nothing (S57).
func TestPreparedQueryRefusals(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", nil, "passing")
	id, _, err := f.client.PreparedQuery().Create(&api.PreparedQueryDefinition{Name: "taken", Service: api.ServiceQuery{Service: "web"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := f.b.Store().Hash()
	for _, tc := range []struct {
		what, method, path, body string
		code                     int
		text                     string
	}{
		{"garbage", post, "/v1/query", `{`, 400, "Request decode failed: unexpected end of JSON input"},
		{"ID on create", post, "/v1/query", `{"ID":"x","Name":"a","Service":{"Service":"web"}}`, 400, "ID must be empty when creating a new prepared query"},
		{"no name no session", post, "/v1/query", `{"Service":{"Service":"web"}}`, 400, "Invalid prepared query: Must be bound to a session"},
		{"empty body", post, "/v1/query", ``, 400, "Invalid prepared query: Must be bound to a session"},
		{"no service", post, "/v1/query", `{"Name":"a"}`, 400, "Invalid prepared query: Must provide a Service name to query"},
		{"redacted token", post, "/v1/query", `{"Name":"a","Token":"<hidden>","Service":{"Service":"web"}}`, 400, "Invalid prepared query: Bad Token '<hidden>', it looks like a query definition with a redacted token was submitted"},
		{"negative NearestN", post, "/v1/query", `{"Name":"a","Service":{"Service":"web","Failover":{"NearestN":-1}}}`, 400, "Invalid prepared query: Bad NearestN '-1', must be >= 0"},
		{"bad DNS TTL", post, "/v1/query", `{"Name":"a","Service":{"Service":"web"},"DNS":{"TTL":"soon"}}`, 400, "Invalid prepared query: Bad DNS TTL 'soon'"},
		{"template type", post, "/v1/query", `{"Name":"a","Template":{"Type":"prefix"},"Service":{"Service":"web"}}`, 400, "failed compiling template: Bad Template.Type 'prefix'"},
		{"template regexp", post, "/v1/query", `{"Name":"a","Template":{"Type":"name_prefix_match","Regexp":"("},"Service":{"Service":"web"}}`, 400, "failed compiling template: Bad Regexp: error parsing regexp: missing closing ): `(`"},
		{"template format", post, "/v1/query", `{"Name":"a","Template":{"Type":"name_prefix_match"},"Service":{"Service":"${name.full"}}`, 400, `failed compiling template: Bad format '${name.full' in Service.Service: parse error at 1:12: expected "}" but found end of string`},
		{"template variable", post, "/v1/query", `{"Name":"a","Template":{"Type":"name_prefix_match"},"Service":{"Service":"web","Tags":["${nope}"]}}`, 400, "failed compiling template: Bad evaluation for '${nope}' in Service.Tags[0]: 1:3: unknown variable accessed: nope"},
		{"name taken, other case", post, "/v1/query", `{"Name":"TAKEN","Service":{"Service":"web"}}`, 400, "name 'TAKEN' aliases an existing query name"},
		{"name is an ID", post, "/v1/query", `{"Name":"` + id + `","Service":{"Service":"web"}}`, 400, "name '" + id + "' aliases an existing query ID"},
		{"unknown session", post, "/v1/query", `{"Name":"a","Session":"nosuch","Service":{"Service":"web"}}`, 400, `invalid session "nosuch"`},
		{"update unknown", put, "/v1/query/nosuch", `{"Name":"a","Service":{"Service":"web"}}`, 400, "Cannot modify non-existent prepared query: 'nosuch'"},
		{"update unknown, bad body", put, "/v1/query/nosuch", `{}`, 400, "Cannot modify non-existent prepared query: 'nosuch'"},
		{"update to no service", put, "/v1/query/" + id, `{"Name":"taken"}`, 400, "Invalid prepared query: Must provide a Service name to query"},
		{"delete unknown", del, "/v1/query/nosuch", ``, 400, "Cannot modify non-existent prepared query: 'nosuch'"},
		{"get unknown", get, "/v1/query/nosuch", ``, 404, "Query not found"},
		{"execute unknown", get, "/v1/query/nosuch/execute", ``, 404, "Query not found"},
		{"explain unknown", get, "/v1/query/nosuch/explain", ``, 404, "Query not found"},
		{"bad limit", get, "/v1/query/" + id + "/execute?limit=x", ``, 400, `Bad limit: "x"`},
		{"execute by PUT", put, "/v1/query/" + id + "/execute", ``, 405, ""},
		{"unknown verb", get, "/v1/query/" + id + "/run", ``, 404, "Query not found"},
		{"PUT the collection", put, "/v1/query", `{}`, 405, ""},
		{"oversized ID", get, "/v1/query/" + strings.Repeat("q", 1025), ``, 413, "Query ID too long (1025 > 1024 bytes)"},
	} {
		r := f.do(tc.method, tc.path, []byte(tc.body))
		if r.code != tc.code || !strings.HasPrefix(r.text(), tc.text) || strings.Contains(r.text(), "\n") {
			t.Errorf("%s: got %d %q, want %d %q", tc.what, r.code, r.text(), tc.code, tc.text)
		}
	}
	if f.b.Store().Hash() != before {
		t.Fatal("a refused query write changed the state")
	}
	// Consul's status in the compat profile is 500 (S60).
	c := newFixture(t, withOptions(httpapi.Options{Compat: true}))
	want(t, "compat refusal", c.do(post, "/v1/query", []byte(`{"Service":{"Service":"web"}}`)),
		http.StatusInternalServerError, "Invalid prepared query: Must be bound to a session")
}

// A template answers execute and explain for every name it prefixes,
// rendered for that name; an exact name wins over a template and the
// longest prefix over a shorter one; a template is never run by its ID
// (S83).
func TestPreparedQueryTemplates(t *testing.T) {
	f := newFixture(t)
	f.registerWeb("n1", "10.0.0.1", []string{"v1"}, "passing")
	create := func(body string) string {
		t.Helper()
		r := f.do(post, "/v1/query", []byte(body))
		want(t, "create "+body, r, 200, "")
		return decode[struct{ ID string }](t, r).ID
	}
	catchAll := create(`{"Template":{"Type":"name_prefix_match"},"Service":{"Service":"${name.full}"}}`)
	geo := create(`{"Name":"geo-","Template":{"Type":"name_prefix_match","Regexp":"^geo-(.+?)-(.*)$","RemoveEmptyTags":true},` +
		`"Service":{"Service":"${match(1)}","Tags":["${match(2)}",""]}}`)
	want(t, "a second template without a name", f.do(post, "/v1/query", []byte(`{"Template":{"Type":"name_prefix_match"},"Service":{"Service":"x"}}`)),
		400, "a query template with an empty name already exists")

	type execute struct {
		Service string
		Nodes   []struct{ Service struct{ ID string } }
	}
	ex := decode[execute](t, f.do(get, "/v1/query/geo-web-v1/execute", nil))
	if ex.Service != "web" || len(ex.Nodes) != 1 || ex.Nodes[0].Service.ID != "web-n1" {
		t.Errorf("geo-web-v1 through the geo- template: %+v", ex)
	}
	if ex := decode[execute](t, f.do(get, "/v1/query/geo-web-v2/execute", nil)); len(ex.Nodes) != 0 {
		t.Errorf("the rendered tag v2 matched: %+v", ex)
	}
	if ex := decode[execute](t, f.do(get, "/v1/query/web/execute", nil)); ex.Service != "web" || len(ex.Nodes) != 1 {
		t.Errorf("web through the template without a name: %+v", ex)
	}
	type explain struct {
		Query struct {
			ID       string
			Template struct{ Type string }
			Service  struct {
				Service string
				Tags    []string
			}
		}
	}
	e := decode[explain](t, f.do(get, "/v1/query/geo-db-/explain", nil))
	if e.Query.ID != geo || e.Query.Service.Service != "db" || len(e.Query.Service.Tags) != 0 || e.Query.Template.Type != "name_prefix_match" {
		t.Errorf("explain of geo-db- (the empty tag removed): %+v", e.Query)
	}
	// The prefix compares ignoring case; the regexp, as written, does not.
	if e := decode[explain](t, f.do(get, "/v1/query/GEO-db-x/explain", nil)); e.Query.ID != geo || e.Query.Service.Service != "" {
		t.Errorf("explain of GEO-db-x: %+v", e.Query)
	}
	want(t, "a template by its ID", f.do(get, "/v1/query/"+catchAll+"/execute", nil),
		500, "prepared query templates can only be resolved up by name, not by ID")
	// The stored template reads back as written.
	raw := f.do(get, "/v1/query/"+catchAll, nil)
	if !strings.Contains(raw.text(), `"Service":"${name.full}"`) {
		t.Errorf("stored template: %s", raw.text())
	}
}
