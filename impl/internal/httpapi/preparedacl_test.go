package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestACLPreparedQueriesEnforced: S90 on prepared queries, as measured on
// Consul (CONSUL.md §23): query rules govern named queries, an unnamed one
// is open to whoever has its ID, tokens are hidden from all but management,
// and an execute filters by the query's own token.
func TestACLPreparedQueriesEnforced(t *testing.T) {
	f := catalogACLFixture(t)
	// n3 runs a web instance with no checks, the only healthy one.
	want(t, "register n3", f.call("PUT", "/v1/catalog/register", mgmtSecret,
		`{"Node":"n3","Address":"10.0.0.3","Service":{"Service":"web","ID":"web3"}}`), 200, "true")
	f.policy("qread", `query_prefix "web" { policy = "read" }
node "n1" { policy = "read" }
service "web" { policy = "read" }`)
	f.policy("qwrite", `query_prefix "web" { policy = "write" }`)
	f.policy("sess", `session_prefix "" { policy = "write" }`)
	reader, _ := f.token("qread")
	writer, wacc := f.token("qwrite")
	sessTok, _ := f.token("sess")
	create := func(token, body string) string {
		t.Helper()
		r := f.call("POST", "/v1/query", token, body)
		want(t, "create "+body, r, 200, "")
		return decode[map[string]string](t, r)["ID"]
	}
	r := f.call("PUT", "/v1/session/create", sessTok, `{"Node":"n3","NodeChecks":[]}`)
	want(t, "session", r, 200, "")
	sid := decode[map[string]string](t, r)["ID"]
	named := create(mgmtSecret, `{"Name":"web","Token":"`+reader+`","Service":{"Service":"web"}}`)
	db := create(mgmtSecret, `{"Name":"db","Service":{"Service":"db"}}`)
	plain := create(mgmtSecret, `{"Name":"webx","Service":{"Service":"web"}}`)
	unnamed := create("", `{"Session":"`+sid+`","Token":"tok","Service":{"Service":"web"}}`)

	// Reads.
	r = f.call("GET", "/v1/query", reader, nil)
	if got := queryNames(t, r); got != "web:<hidden>,webx:" || r.header.Get("X-Consul-Results-Filtered-By-ACLs") != "true" {
		t.Errorf("list as reader: %s, header %q", got, r.header.Get("X-Consul-Results-Filtered-By-ACLs"))
	}
	r = f.call("GET", "/v1/query", mgmtSecret, nil)
	if got := queryNames(t, r); got != ":tok,db:,web:"+reader+",webx:" || r.header.Get("X-Consul-Results-Filtered-By-ACLs") != "" {
		t.Errorf("list as management: %s", got)
	}
	r = f.call("GET", "/v1/query", "", nil)
	if got := queryNames(t, r); got != "" || r.header.Get("X-Consul-Results-Filtered-By-ACLs") != "" {
		t.Errorf("list as anonymous: %q", got)
	}
	want(t, "get db as reader", f.call("GET", "/v1/query/"+db, reader, nil), 403, "Permission denied")
	want(t, "get web as anonymous", f.call("GET", "/v1/query/"+named, "", nil), 403, "Permission denied")
	if got := queryNames(t, f.call("GET", "/v1/query/"+unnamed, "", nil)); got != ":<hidden>" {
		t.Errorf("get unnamed as anonymous: %q", got)
	}
	want(t, "explain unnamed as anonymous", f.call("GET", "/v1/query/"+unnamed+"/explain", "", nil), 403, "Permission denied")
	if r := f.call("GET", "/v1/query/"+named+"/explain", reader, nil); r.code != 200 || !strings.Contains(r.text(), `"Token":"\u003chidden\u003e"`) {
		t.Errorf("explain web as reader: %d %s", r.code, r.text())
	}

	// Writes.
	for _, tc := range []struct {
		what, method, path, token, body string
		code                            int
		text                            string
	}{
		{"create db2 as anonymous", "POST", "/v1/query", "", `{"Name":"db2","Service":{"Service":"db"}}`, 403,
			`Permission denied: anonymous token lacks permission 'query:write' on "db2". The anonymous token is used implicitly when a request does not specify a token.`},
		{"rename db to web3", "PUT", "/v1/query/" + db, writer, `{"Name":"web3","Service":{"Service":"db"}}`, 403,
			fmt.Sprintf(`Permission denied: token with AccessorID '%s' lacks permission 'query:write' on "db"`, wacc)},
		{"delete db", "DELETE", "/v1/query/" + db, writer, "", 403,
			fmt.Sprintf(`Permission denied: token with AccessorID '%s' lacks permission 'query:write' on "db"`, wacc)},
		{"update web as anonymous", "PUT", "/v1/query/" + named, "", `{"Name":"web","Service":{"Service":"web"}}`, 403,
			`Permission denied: anonymous token lacks permission 'query:write' on "web". The anonymous token is used implicitly when a request does not specify a token.`},
		{"invalid named create, denied first", "POST", "/v1/query", "", `{"Name":"db3"}`, 403,
			`Permission denied: anonymous token lacks permission 'query:write' on "db3". The anonymous token is used implicitly when a request does not specify a token.`},
	} {
		f.unchanged(tc.what, func() {
			want(t, tc.what, f.call(tc.method, tc.path, tc.token, tc.body), tc.code, tc.text)
		})
	}
	create(writer, `{"Name":"web2","Service":{"Service":"web"}}`)
	want(t, "update unnamed as anonymous", f.call("PUT", "/v1/query/"+unnamed, "", `{"Session":"`+sid+`","Service":{"Service":"db"}}`), 200, "")

	// Execute: the query's token decides, else the caller's.
	for _, tc := range []struct {
		what, id, token, nodes string
		filtered               bool
	}{
		{"web runs with the reader's token", named, mgmtSecret, "", true},
		{"webx as reader", plain, reader, "", true},
		{"webx as anonymous", plain, "", "", false},
		{"webx as management", plain, mgmtSecret, "n3", false},
	} {
		r := f.call("GET", "/v1/query/"+tc.id+"/execute", tc.token, nil)
		got := decode[struct {
			Nodes                 []struct{ Node struct{ Node string } }
			ResultsFilteredByACLs bool
		}](t, r)
		var nodes []string
		for _, n := range got.Nodes {
			nodes = append(nodes, n.Node.Node)
		}
		header := r.header.Get("X-Consul-Results-Filtered-By-ACLs") == "true"
		if r.code != 200 || strings.Join(nodes, ",") != tc.nodes || got.ResultsFilteredByACLs != tc.filtered || header != tc.filtered {
			t.Errorf("%s: %d nodes %v, filtered %v, header %v", tc.what, r.code, nodes, got.ResultsFilteredByACLs, header)
		}
	}
}

// queryNames is a query list (or a one-query get) as "name:token", sorted.
func queryNames(t *testing.T, r reply) string {
	t.Helper()
	if r.code != 200 {
		t.Fatalf("query read: %d %s", r.code, r.text())
	}
	var out []string
	for _, q := range decode[[]struct{ Name, Token string }](t, r) {
		out = append(out, q.Name+":"+q.Token)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
