package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Filtered reads (S66): ?filter, a go-bexpr expression over the fields of
// Consul's types, on the catalog, health and agent reads; and tenure's
// bounds on it (S39). Every expression names this case's own nodes,
// services and checks, so parallel cases do not disturb it.

func filterCases() []Case {
	return []Case{
		{clause: "S66", name: "catalog-and-health-reads-keep-what-the-filter-selects", run: s66CatalogHealth},
		{clause: "S66", name: "agent-reads-keep-what-the-filter-selects", run: s66Agent},
		{clause: "S66", name: "blocking-read-with-a-filter-wakes-on-its-index", run: s66Blocking},
		{clause: "S66", name: "bad-filter-refused-with-go-bexpr-reason", run: s66Refused},
		{clause: "S39", name: "filter-over-the-bounds-400", run: s39FilterBounds},
	}
}

// filterPrefix starts go-bexpr's refusal of an expression.
const filterPrefix = "Failed to create boolean expression evaluator: "

// filtered GETs path with ?filter=expr.
func (t *caseT) filtered(path, expr string) *resp {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return t.Do(http.MethodGet, path+sep+"filter="+url.QueryEscape(expr), nil)
}

// filterWorld registers two nodes of this case, "prod" and "dev", each
// with an instance of one service of this case (version 1 on prod, 2 on
// dev) that has a service check (passing on prod, warning on dev), and a
// node check "disk". It returns the node names and the service name.
func (t *caseT) filterWorld() (prod, dev, svc string) {
	prod, dev, svc = t.RegisterNode("prod"), t.RegisterNode("dev"), t.ServiceName("cache")
	for _, n := range []struct{ node, env, version, tag, status string }{
		{prod, "prod", "1", "primary", "passing"},
		{dev, "dev", "2", "replica", "warning"},
	} {
		t.catalog("register", map[string]any{"Node": n.node, "Address": "127.0.0.1",
			"NodeMeta": map[string]string{"env": n.env},
			"Service": map[string]any{"ID": svc, "Service": svc, "Tags": []string{n.tag, "v" + n.version},
				"Meta": map[string]string{"version": n.version}, "Port": 6379},
			"Checks": []map[string]any{
				{"Node": n.node, "CheckID": "svc", "Name": "svc", "Status": n.status, "ServiceID": svc},
				{"Node": n.node, "CheckID": "disk", "Name": "disk", "Status": "passing"},
			}})
	}
	return prod, dev, svc
}

// listed reads a list answer and names each entry by pick.
func listed[E any](t *caseT, what string, r *resp, pick func(E) string) []string {
	t.Require(r.Code == 200, "%s: want 200, got %s", what, r)
	var es []E
	t.decode(what, r, &es)
	out := []string{}
	for _, e := range es {
		out = append(out, pick(e))
	}
	slices.Sort(out)
	return out
}

// sameIndex checks that a filtered read answered the index an unfiltered
// read does: between the indexes of unfiltered reads just before and after
// it (other cases write meanwhile), and equal to them when they agree.
func (t *caseT) sameIndex(what, path string, read func() *resp) {
	before := t.Do(http.MethodGet, path, nil).Index()
	got := read().Index()
	after := t.Do(http.MethodGet, path, nil).Index()
	t.Check(before <= got && got <= after, "%s: X-Consul-Index %d, unfiltered %d before and %d after", what, got, before, after)
}

func s66CatalogHealth(t *caseT) {
	prod, dev, svc := t.filterWorld()
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	ours := "(Node == " + q(prod) + " or Node == " + q(dev) + ")"
	node := func(e struct{ Node string }) string { return e.Node }
	check := func(e struct{ Node, CheckID string }) string { return e.Node + "/" + e.CheckID }
	entry := func(e struct{ Node struct{ Node string } }) string { return e.Node.Node }
	pe := url.PathEscape

	for _, c := range []struct {
		path, expr string
		got        func(r *resp) []string
		want       []string
	}{
		{"/v1/catalog/nodes", ours + " and Meta.env == dev", func(r *resp) []string { return listed(t, "nodes", r, node) }, []string{dev}},
		{"/v1/catalog/nodes", ours + ` and Meta.env matches "^pr"`, func(r *resp) []string { return listed(t, "nodes", r, node) }, []string{prod}},
		{"/v1/catalog/service/" + pe(svc), "ServiceMeta.version == 1", func(r *resp) []string { return listed(t, "service", r, node) }, []string{prod}},
		{"/v1/catalog/service/" + pe(svc), "replica in ServiceTags and NodeMeta.env == dev and ServicePort == 6379",
			func(r *resp) []string { return listed(t, "service", r, node) }, []string{dev}},
		{"/v1/catalog/service/" + pe(svc), "ServiceConnect.Native == true", func(r *resp) []string { return listed(t, "service", r, node) }, []string{}},
		{"/v1/health/node/" + pe(prod), "ServiceID == ``", func(r *resp) []string { return listed(t, "health node", r, check) }, []string{prod + "/disk"}},
		{"/v1/health/checks/" + pe(svc), "Status == warning", func(r *resp) []string { return listed(t, "health checks", r, check) }, []string{dev + "/svc"}},
		{"/v1/health/state/any", ours + " and Status != passing", func(r *resp) []string { return listed(t, "health state", r, check) }, []string{dev + "/svc"}},
		{"/v1/health/state/passing", "Node == " + q(dev), func(r *resp) []string { return listed(t, "health state", r, check) }, []string{dev + "/disk"}},
		{"/v1/health/service/" + pe(svc), "Checks.Status == warning", func(r *resp) []string { return listed(t, "health service", r, entry) }, []string{dev}},
		{"/v1/health/service/" + pe(svc), "Node.Meta.env == prod and Service.Meta.version == 1 and v1 in Service.Tags",
			func(r *resp) []string { return listed(t, "health service", r, entry) }, []string{prod}},
		{"/v1/health/service/" + pe(svc) + "?passing", "Node.Meta.env == dev", func(r *resp) []string { return listed(t, "health service", r, entry) }, []string{}},
	} {
		what := c.path + " ?filter=" + c.expr
		t.Equal(what, c.got(t.filtered(c.path, c.expr)), c.want)
		t.sameIndex(what, c.path, func() *resp { return t.filtered(c.path, c.expr) })
	}

	// /v1/catalog/services filters instances, then lists the names and
	// tags of those kept.
	var names map[string][]string
	r := t.filtered("/v1/catalog/services", "ServiceName == "+q(svc)+" and NodeMeta.env == dev")
	t.Require(r.Code == 200, "catalog services: %s", r)
	t.decode("catalog services", r, &names)
	if tags, ok := names[svc]; t.Check(ok && len(names) == 1, "catalog services kept %v, want only %s", names, svc) {
		slices.Sort(tags)
		t.Equal("tags of the kept instance", tags, []string{"replica", "v2"})
	}

	// A node's services, as a map and as a list.
	var asMap struct{ Services map[string]json.RawMessage }
	t.decode("catalog node", t.filtered("/v1/catalog/node/"+pe(prod), "v2 in Tags"), &asMap)
	t.Equal("catalog node services with v2", len(asMap.Services), 0)
	asMap.Services = nil
	t.decode("catalog node", t.filtered("/v1/catalog/node/"+pe(prod), "Meta.version == 1 and Weights.Passing == 1"), &asMap)
	t.Equal("catalog node services of version 1", len(asMap.Services), 1)
	var asList struct{ Services []json.RawMessage }
	t.decode("node services", t.filtered("/v1/catalog/node-services/"+pe(dev), "Service == "+q(svc)+" and Port == 6379"), &asList)
	t.Equal("node-services kept", len(asList.Services), 1)
}

func s66Agent(t *caseT) {
	web := t.RegisterAgentService("web", map[string]any{"Tags": []string{"blue"}, "Meta": map[string]string{"tier": "front"}, "Port": 8080})
	api := t.RegisterAgentService("api", map[string]any{"Tags": []string{"green"}, "Port": 8081})
	chk := t.RegisterAgentCheck("ttl", map[string]any{"TTL": "30s", "Status": "passing"})
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	keys := func(what string, r *resp) []string {
		t.Require(r.Code == 200, "%s: want 200, got %s", what, r)
		var m map[string]json.RawMessage
		t.decode(what, r, &m)
		out := []string{}
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	ours := "(ID == " + q(web) + " or ID == " + q(api) + ")"
	t.Equal("agent services in blue", keys("agent services", t.filtered("/v1/agent/services", ours+" and blue in Tags")), []string{web})
	t.Equal("agent services not front", keys("agent services", t.filtered("/v1/agent/services", ours+" and Meta.tier != front")), []string{api})
	t.Equal("agent services on 8081", keys("agent services", t.filtered("/v1/agent/services", ours+" and Port == 8081 and Weights.Passing == 1")), []string{api})
	t.Equal("agent checks by ID", keys("agent checks", t.filtered("/v1/agent/checks", "CheckID == "+q(chk)+" and Status == passing")), []string{chk})
	t.Equal("agent checks of a type", keys("agent checks", t.filtered("/v1/agent/checks", "CheckID == "+q(chk)+" and Type == http")), []string{})

	me := t.AgentNode()
	members := func(expr string) []string {
		return listed(t, "agent members", t.filtered("/v1/agent/members", expr), func(m struct{ Name string }) string { return m.Name })
	}
	t.Equal("the agent among the alive members", members("Name == "+q(me)+" and Status == 1"), []string{me})
	t.Equal("the agent with a tag it lacks", members("Name == "+q(me)+" and Tags.nosuchtag == x"), []string{})
}

func s66Blocking(t *caseT) {
	prod, _, svc := t.filterWorld()
	path := "/v1/health/service/" + url.PathEscape(svc) + "?filter=" + url.QueryEscape("Node.Meta.env == nope")
	first := t.Do(http.MethodGet, path, nil)
	t.Require(first.Code == 200 && first.Text() == "[]", "filter that keeps nothing: %s", first)
	wait := t.blockingGet(path, first.Index(), "10s")
	t.Sleep(500 * time.Millisecond)
	// A change the filter does not keep still moves the read's index.
	t.catalog("register", map[string]any{"Node": prod, "Address": "127.0.0.1", "SkipNodeUpdate": true,
		"Check": map[string]any{"Node": prod, "CheckID": "svc", "Name": "svc", "Status": "critical", "ServiceID": svc}})
	res := wait()
	t.Check(res.r.Code == 200 && res.r.Text() == "[]", "woken read: want 200 [], got %s", res.r)
	t.Check(res.r.Index() > first.Index(), "woken read: index %d, was %d", res.r.Index(), first.Index())
	t.Check(res.took < 8*time.Second, "the read waited %v for a change to its service's checks", res.took)
}

func s66Refused(t *caseT) {
	prod, _, svc := t.filterWorld()
	before := t.nodeInfo(prod)
	pe := url.PathEscape
	paths := []string{"/v1/catalog/nodes", "/v1/catalog/services", "/v1/catalog/service/" + pe(svc),
		"/v1/catalog/node/" + pe(prod), "/v1/catalog/node-services/" + pe(prod), "/v1/health/node/" + pe(prod),
		"/v1/health/checks/" + pe(svc), "/v1/health/state/any", "/v1/health/service/" + pe(svc),
		"/v1/agent/services", "/v1/agent/members"}
	for _, p := range paths {
		for _, b := range []struct{ expr, reason string }{
			{"NoSuchField == 1", `Selector "NoSuchField" is not valid`},
			{"NoSuchField ==", "no match found"},
			{"((NoSuchField == a)", "Unmatched parentheses"},
		} {
			r := t.filtered(p, b.expr)
			t.Check((r.Code == 400 || r.Code == 500) && strings.HasPrefix(r.Text(), filterPrefix) &&
				strings.Contains(r.Text(), b.reason) && !strings.Contains(r.Text(), "\n"),
				"%s ?filter=%s: want 400 or 500 %q…%q, got %s", p, b.expr, filterPrefix, b.reason, r)
		}
	}
	for _, b := range []struct{ path, expr, want string }{
		{"/v1/catalog/service/" + pe(svc), "ServiceTags == primary", `Invalid match operator "Equal" for selector "ServiceTags"`},
		{"/v1/catalog/service/" + pe(svc), "ServicePort == http", `Failed to coerce value "http" for selector "ServicePort": strconv.ParseInt: parsing "http": invalid syntax`},
		{"/v1/catalog/nodes", `Node matches "("`, "Failed to compile regular expression \"(\": error parsing regexp: missing closing ): `(`"},
		{"/v1/catalog/nodes", "CreateIndex == 1", `Selector "CreateIndex" is not valid`},
		{"/v1/agent/services", "Datacenter == dc1", `Selector "Datacenter" is not valid`},
	} {
		r := t.filtered(b.path, b.expr)
		t.Check((r.Code == 400 || r.Code == 500) && r.Text() == filterPrefix+b.want,
			"%s ?filter=%s: want 400 or 500 %q, got %s", b.path, b.expr, filterPrefix+b.want, r)
	}
	after := t.nodeInfo(prod)
	t.Check(after != nil && after.ModifyIndex == before.ModifyIndex, "the refused reads changed node %s", prod)
	// An empty filter filters nothing.
	r := t.filtered("/v1/catalog/service/"+pe(svc), "")
	t.Equal("instances with an empty filter", len(listed(t, "service", r, func(e struct{ Node string }) string { return e.Node })), 2)
}

// tenure bounds an expression's parse and its comparisons (S39); Consul
// parses 8 levels of parentheses for seconds and bounds no comparisons.
func s39FilterBounds(t *caseT) {
	deep := strings.Repeat("(", 8) + "Node == a" + strings.Repeat(")", 8)
	r := t.filtered("/v1/catalog/nodes", deep)
	t.Check(r.Code == 400 && strings.HasPrefix(r.Text(), filterPrefix+"expression too complex"),
		"8 levels of parentheses: want 400 %q…, got %s", filterPrefix+"expression too complex", r)
	terms := func(n int) string {
		ts := make([]string, n)
		for i := range ts {
			ts[i] = fmt.Sprintf("Node == n%d", i)
		}
		return strings.Join(ts, " or ")
	}
	r = t.filtered("/v1/catalog/nodes", terms(512))
	t.Check(r.Code == 200, "512 comparisons: want 200, got %s", r)
	r = t.filtered("/v1/catalog/nodes", terms(513))
	t.Check(r.Code == 400 && r.Text() == filterPrefix+"Number of match expressions (513) exceeds the limit (512)",
		"513 comparisons: want 400, got %s", r)
}
