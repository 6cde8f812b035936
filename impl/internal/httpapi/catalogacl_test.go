package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// catalogACLFixture is an ACL fixture (default deny) with two nodes: n1
// runs web1 (web) and db1 (db) with a node check nc and a check on each
// service, n2 runs web2 (web) with a node check n2c.
func catalogACLFixture(t *testing.T) *aclFixture {
	t.Helper()
	f := newACLFixture(t, "deny")
	for _, reg := range []string{
		`{"Node":"n1","Address":"10.0.0.1","Service":{"Service":"web","ID":"web1"},"Checks":[{"CheckID":"nc","Name":"nc"},{"CheckID":"wc","Name":"wc","ServiceID":"web1"}]}`,
		`{"Node":"n1","Address":"10.0.0.1","Service":{"Service":"db","ID":"db1"},"Checks":[{"CheckID":"dc","Name":"dc","ServiceID":"db1"}]}`,
		`{"Node":"n2","Address":"10.0.0.2","Service":{"Service":"web","ID":"web2"},"Checks":[{"CheckID":"n2c","Name":"n2c"}]}`,
	} {
		want(t, "register", f.call("PUT", "/v1/catalog/register", mgmtSecret, reg), 200, "true")
	}
	return f
}

// summary reduces a catalog or health answer to the sorted names it
// shows: nodes as "node", instances as "node/serviceID", checks as
// "node:checkID", services as their names.
func summary(path string, body []byte) (string, error) {
	var out []string
	var err error
	switch {
	case strings.HasPrefix(path, "/v1/catalog/nodes"):
		var v []struct{ Node string }
		err = json.Unmarshal(body, &v)
		for _, n := range v {
			out = append(out, n.Node)
		}
	case strings.HasPrefix(path, "/v1/catalog/services"):
		var v map[string][]string
		err = json.Unmarshal(body, &v)
		for name := range v {
			out = append(out, name)
		}
	case strings.HasPrefix(path, "/v1/catalog/service/"):
		var v []struct{ Node, ServiceID string }
		err = json.Unmarshal(body, &v)
		for _, s := range v {
			out = append(out, s.Node+"/"+s.ServiceID)
		}
	case strings.HasPrefix(path, "/v1/catalog/node/"):
		var v *struct {
			Node     struct{ Node string }
			Services map[string]any
		}
		err = json.Unmarshal(body, &v)
		if v != nil {
			for id := range v.Services {
				out = append(out, v.Node.Node+"/"+id)
			}
		}
	case strings.HasPrefix(path, "/v1/catalog/node-services/"):
		var v struct {
			Node     *struct{ Node string }
			Services []struct{ ID string }
		}
		err = json.Unmarshal(body, &v)
		if v.Node != nil {
			for _, s := range v.Services {
				out = append(out, v.Node.Node+"/"+s.ID)
			}
		}
	case strings.HasPrefix(path, "/v1/health/service/"):
		var v []struct {
			Node    struct{ Node string }
			Service struct{ ID string }
		}
		err = json.Unmarshal(body, &v)
		for _, e := range v {
			out = append(out, e.Node.Node+"/"+e.Service.ID)
		}
	case strings.HasPrefix(path, "/v1/health/"):
		var v []struct{ Node, CheckID string }
		err = json.Unmarshal(body, &v)
		for _, c := range v {
			out = append(out, c.Node+":"+c.CheckID)
		}
	default:
		return "", fmt.Errorf("no summary for %s", path)
	}
	slices.Sort(out)
	return strings.Join(out, ","), err
}

// checkRead is the checker of a filtered read: the answer shows exactly
// wantNames and says it was filtered exactly when wantHeader.
func checkRead(path string, r reply, wantNames string, wantHeader bool) error {
	if r.code != 200 {
		return fmt.Errorf("%s: %d %s", path, r.code, r.text())
	}
	got, err := summary(path, r.body)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if got != wantNames {
		return fmt.Errorf("%s: shows %q, want %q", path, got, wantNames)
	}
	if h := r.header.Get("X-Consul-Results-Filtered-By-ACLs") == "true"; h != wantHeader {
		return fmt.Errorf("%s: filtered header %v, want %v", path, h, wantHeader)
	}
	return nil
}

// catalogReads are the reads under test with what a token reading node n1
// and service web sees of catalogACLFixture, and what management sees
// (with the server's own node-a).
var catalogReads = []struct{ path, n1web, all string }{
	{"/v1/catalog/nodes", "n1", "n1,n2,node-a"},
	{"/v1/catalog/services", "web", "db,web"},
	{"/v1/catalog/service/web", "n1/web1", "n1/web1,n2/web2"},
	{"/v1/catalog/node/n1", "n1/web1", "n1/db1,n1/web1"},
	{"/v1/catalog/node/n2", "", "n2/web2"},
	{"/v1/catalog/node-services/n1", "n1/web1", "n1/db1,n1/web1"},
	{"/v1/catalog/node-services/n2", "", "n2/web2"},
	{"/v1/health/node/n1", "n1:nc,n1:wc", "n1:dc,n1:nc,n1:wc"},
	{"/v1/health/checks/db", "", "n1:dc"},
	{"/v1/health/state/any", "n1:nc,n1:wc", "n1:dc,n1:nc,n1:wc,n2:n2c,node-a:serfHealth"},
	{"/v1/health/service/web", "n1/web1", "n1/web1,n2/web2"},
}

// TestACLCatalogReadsFiltered: S90's read filtering with Consul's header
// rule: a named token is told records were dropped, the anonymous token is
// not, and a token that reads everything sees everything unflagged.
func TestACLCatalogReadsFiltered(t *testing.T) {
	f := catalogACLFixture(t)
	f.policy("n1web", `node "n1" { policy = "read" }
service "web" { policy = "read" }`)
	secret, _ := f.token("n1web")
	for _, rd := range catalogReads {
		if err := checkRead(rd.path, f.call("GET", rd.path, secret, nil), rd.n1web, rd.n1web != rd.all); err != nil {
			t.Error(err)
		}
		if err := checkRead(rd.path, f.call("GET", rd.path, mgmtSecret, nil), rd.all, false); err != nil {
			t.Error("management:", err)
		}
		if err := checkRead(rd.path, f.call("GET", rd.path, "", nil), "", false); err != nil {
			t.Error("anonymous:", err)
		}
	}
	// ?filter narrows what ACLs left; the header says ACLs dropped
	// something the filter kept (Consul runs ACLs first on these reads).
	r := f.call("GET", "/v1/catalog/nodes?filter="+`Node+==+"n1"`, secret, nil)
	if err := checkRead("/v1/catalog/nodes", r, "n1", true); err != nil {
		t.Error(err)
	}
	// A service's checks are narrowed by ?filter first: a dropped check
	// the filter would not have kept is not reported.
	f.policy("dbn2", `node_prefix "" { policy = "read" }
service "web" { policy = "read" }`)
	webOnly, _ := f.token("dbn2")
	want(t, "register db check on n2", f.call("PUT", "/v1/catalog/register", mgmtSecret,
		`{"Node":"n2","Address":"10.0.0.2","Service":{"Service":"db","ID":"db2"},"Checks":[{"CheckID":"dc2","Name":"dc2","ServiceID":"db2"}]}`), 200, "true")
	r = f.call("GET", "/v1/health/checks/db?filter="+`Node+==+"n1"`, webOnly, nil)
	if err := checkRead("/v1/health/checks/db", r, "", true); err != nil {
		t.Error(err)
	}
	r = f.call("GET", "/v1/health/checks/db?filter="+`Node+==+"n9"`, webOnly, nil)
	if err := checkRead("/v1/health/checks/db", r, "", false); err != nil {
		t.Error(err)
	}
	f.policy("all", `node_prefix "" { policy = "read" }
service_prefix "" { policy = "read" }`)
	all, _ := f.token("all")
	r = f.call("GET", "/v1/health/checks/db?filter="+`Node+==+"n1"`, all, nil)
	if err := checkRead("/v1/health/checks/db", r, "n1:dc", false); err != nil {
		t.Error(err)
	}
}

// TestCheckReadCatchesUnfilteredAnswers: the checker above fails an answer
// that kept everything (a filter that drops nothing) and one that dropped
// records without saying so.
func TestCheckReadCatchesUnfilteredAnswers(t *testing.T) {
	f := catalogACLFixture(t)
	for _, rd := range catalogReads {
		if rd.n1web == rd.all {
			continue
		}
		everything := f.call("GET", rd.path, mgmtSecret, nil)
		if checkRead(rd.path, everything, rd.n1web, true) == nil {
			t.Errorf("%s: an unfiltered answer passed", rd.path)
		}
	}
	silent := reply{code: 200, body: []byte(`[{"Node":"n1"}]`)}
	if checkRead("/v1/catalog/nodes", silent, "n1", true) == nil {
		t.Error("a filtered answer without the header passed")
	}
}

// TestACLCatalogWritesEnforced: S90's register and deregister rules, each
// denial with Consul's status and text and no change to the state.
func TestACLCatalogWritesEnforced(t *testing.T) {
	f := catalogACLFixture(t)
	f.policy("node", `node "n1" { policy = "write" }`)
	f.policy("web", `service "web" { policy = "write" }`)
	nodeW, _ := f.token("node")
	webW, webAcc := f.token("web")
	denied := func(perm, name string) string {
		return fmt.Sprintf(`Permission denied: token with AccessorID '%s' lacks permission '%s' on "%s"`, webAcc, perm, name)
	}
	for _, tc := range []struct {
		what, path, token, body string
		code                    int
		text                    string
	}{
		{"anonymous register", "/v1/catalog/register", "", `{"Node":"n3","Address":"10.0.0.3"}`, 403,
			`Permission denied: anonymous token lacks permission 'node:write' on "n3". The anonymous token is used implicitly when a request does not specify a token.`},
		{"service token creates a node", "/v1/catalog/register", webW, `{"Node":"n3","Address":"10.0.0.3","Service":{"Service":"web","ID":"web3"}}`, 403, denied("node:write", "n3")},
		{"service token, other service", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.1","Service":{"Service":"db","ID":"db9"}}`, 403, denied("service:write", "db")},
		{"service token, other service first", "/v1/catalog/register", webW, `{"Node":"n9","Address":"10.0.0.9","Service":{"Service":"db","ID":"db9"}}`, 403, denied("service:write", "db")},
		{"overwrite db1 by ID", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.1","Service":{"Service":"web","ID":"db1"}}`, 403, "Permission denied"},
		{"check on db1", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.1","Checks":[{"CheckID":"x","Name":"x","ServiceID":"db1"}]}`, 403, denied("service:write", "db")},
		{"node check", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.1","Checks":[{"CheckID":"x","Name":"x"}]}`, 403, denied("node:write", "n1")},
		{"changes the node", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.9","Service":{"Service":"web","ID":"web1"}}`, 403, denied("node:write", "n1")},
		{"skip node update of a new node", "/v1/catalog/register", webW, `{"Node":"n7","SkipNodeUpdate":true,"Service":{"Service":"web","ID":"web1"}}`, 403, denied("node:write", "n7")},
		{"deregister db1", "/v1/catalog/deregister", webW, `{"Node":"n1","ServiceID":"db1"}`, 403, denied("service:write", "db")},
		{"deregister unknown service", "/v1/catalog/deregister", webW, `{"Node":"n1","ServiceID":"zz"}`, 500, "Unknown service ID 'zz'"},
		{"deregister unknown check", "/v1/catalog/deregister", webW, `{"Node":"n1","CheckID":"zz"}`, 500, "Unknown check ID 'zz'"},
		{"deregister node check", "/v1/catalog/deregister", webW, `{"Node":"n1","CheckID":"nc"}`, 403, denied("node:write", "n1")},
		{"deregister db check", "/v1/catalog/deregister", webW, `{"Node":"n1","CheckID":"dc"}`, 403, denied("service:write", "db")},
		{"deregister node", "/v1/catalog/deregister", webW, `{"Node":"n1"}`, 403, denied("node:write", "n1")},
		{"a server's own check update", "/v1/agent/check/pass/serfHealth", webW, "", 403, denied("node:write", "node-a")},
	} {
		f.unchanged(tc.what, func() {
			want(t, tc.what, f.call("PUT", tc.path, tc.token, tc.body), tc.code, tc.text)
		})
	}
	for _, tc := range []struct{ what, path, token, body string }{
		{"re-post the node with a web service", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.1","Service":{"Service":"web","ID":"web9"}}`},
		{"check on web1", "/v1/catalog/register", webW, `{"Node":"n1","Address":"10.0.0.1","Checks":[{"CheckID":"x2","Name":"x2","ServiceID":"web1"}]}`},
		{"node check with node:write", "/v1/catalog/register", nodeW, `{"Node":"n1","Address":"10.0.0.1","Checks":[{"CheckID":"nc2","Name":"nc2"}]}`},
		{"deregister a web check", "/v1/catalog/deregister", webW, `{"Node":"n1","CheckID":"x2"}`},
		{"node:write deregisters any service", "/v1/catalog/deregister", nodeW, `{"Node":"n1","ServiceID":"db1"}`},
		{"node:write: unknown service is no error", "/v1/catalog/deregister", nodeW, `{"Node":"n1","ServiceID":"zz"}`},
	} {
		want(t, tc.what, f.call("PUT", tc.path, tc.token, tc.body), 200, "true")
	}
}
