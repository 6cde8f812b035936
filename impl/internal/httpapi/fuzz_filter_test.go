package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hashicorp/go-bexpr"

	"github.com/tenurekv/tenure/model"
)

// filterSeeds are ?filter expressions: Consul's documented forms, each
// kind of refusal, and the inputs the bounds exist for.
var filterSeeds = []string{
	"", " ", "Node == n1", "Meta.env == prod", `Meta["env"] != dev`, "Meta is empty", "env in Meta",
	"ServiceMeta.version == 1 and ServiceTags contains primary", "not (Node == n1 or Node == n2)",
	"Checks.Status == warning", "Service.Tags is not empty", "Node.Meta.env matches `^p`",
	"Status == passing", "ServiceID == ``", `Name matches "("`, "Port == 6379", "Port == x",
	"Tags == a", "Foo == 1", "Node ==", "((Node == a)", "not", "and", "Node == a b",
	"Connect.Native == true", "Proxy.Upstreams.DestinationName == db", "Weights.Passing != 1",
	"ServiceProxy.Expose.Paths is empty", "\"127.0.0.1\" in Addr", "Tags.role == consul", "Status == 1",
	"Node == \"\\x00\"", "Node == \"\\u00e9\"", `Node == "a\"b"`, "1 in Meta", "ID == -1.5",
	// Seven levels of parentheses parse in about 1.9 million steps,
	// over the budget; 513 comparisons are one over the bound.
	strings.Repeat("(", 7) + "Node == a" + strings.Repeat(")", 7),
	strings.Repeat("Node == a or ", filterMaxMatches) + "Node == b",
}

// filterSample is an answer of one filtered kind with the target its
// endpoint filters on; run filters it and counts the entries kept and
// offered.
type filterSample struct {
	target any
	run    func(f *exprFilter) (kept, all int, err error)
}

func sampleOf[T any, V positioned](target any, items []T, view func(int, T) V) filterSample {
	return filterSample{target, func(f *exprFilter) (int, int, error) {
		k, err := keep(f, items, view)
		return len(k), len(items), err
	}}
}

// filterSamples are answers of every filtered kind.
func filterSamples() []filterSample {
	nodes := []nodeJSON{
		{ID: "0d3a", Node: "n1", Address: "10.0.0.1", Datacenter: "dc1", Meta: map[string]string{"env": "prod"}},
		{Node: "n2", Address: "10.0.0.2", Datacenter: "dc1", TaggedAddresses: map[string]string{"lan": "10.0.0.2"}},
	}
	services := []nodeServiceJSON{
		{ID: "redis", Service: "redis", Tags: []string{"primary"}, Meta: map[string]string{"version": "1"}, Port: 6379, Weights: defaultWeights},
		{ID: "web", Service: "web", Tags: []string{}, Meta: map[string]string{}, Weights: defaultWeights},
	}
	checks := []checkJSON{
		{Node: "n1", CheckID: "serfHealth", Name: "Serf Health Status", Status: model.HealthPassing, ServiceTags: []string{}},
		{Node: "n1", CheckID: "svc", Status: model.HealthWarning, ServiceID: "redis", ServiceName: "redis", ServiceTags: []string{"primary"}},
	}
	serviceNodes := []serviceNodeJSON{
		{Node: "n1", Address: "10.0.0.1", NodeMeta: nodes[0].Meta, ServiceID: "redis", ServiceName: "redis",
			ServiceTags: []string{"primary"}, ServiceMeta: map[string]string{"version": "1"}, ServicePort: 6379, ServiceWeights: defaultWeights},
	}
	entries := []healthEntryJSON{{Node: &nodes[0], Service: services[0], Checks: checks}, {Node: &nodes[1], Service: services[1]}}
	agentServices := []agentServiceJSON{{ID: "web", Service: "web", Tags: []string{"a"}, Meta: map[string]string{"v": "1"}, Port: 80}}
	members := []memberJSON{{Name: "s1", Addr: "127.0.0.1", Port: 8301, Tags: map[string]string{"role": "consul"}, Status: 1}}
	return []filterSample{
		sampleOf(onNodes, nodes, viewNode),
		sampleOf(onServiceNodes, serviceNodes, viewServiceNode),
		sampleOf(onNodeServices, services, viewNodeService),
		sampleOf(onChecks, checks, viewCheck),
		sampleOf(onHealthEntry, entries, viewHealthEntry),
		sampleOf(onAgentService, agentServices, viewAgentService),
		sampleOf(onMembers, members, viewMember),
	}
}

// matchCount is the number of comparisons in a parsed expression.
func matchCount(e bexpr.Expression) int {
	switch n := e.(type) {
	case *bexpr.UnaryExpression:
		return matchCount(n.Operand)
	case *bexpr.BinaryExpression:
		return matchCount(n.Left) + matchCount(n.Right)
	case *bexpr.MatchExpression:
		return 1
	}
	return 0
}

// filterProblem is the filter property, over every filtered kind of
// answer: compile either refuses expr with a one-line reason in
// go-bexpr's words, or accepts an expression within the bounds that then
// evaluates on every entry without error (no refusal can come late, after
// the entries were read).
func filterProblem(compile func(expr string, target any) (*bexpr.Filter, error), expr string) error {
	if expr == "" {
		return nil // no filter
	}
	// The parse is the same for every target, and over the budget it is
	// the costly part: parse once here, and let one target show the
	// refusal of an expression over the budget.
	ast, perr := bexpr.Parse("", []byte(expr), bexpr.MaxExpressions(filterParseBudget))
	overBudget := perr != nil && strings.Contains(perr.Error(), "max number of expresssions parsed")
	for i, s := range filterSamples() {
		if overBudget && i > 0 {
			break
		}
		bf, err := compile(expr, s.target)
		if err != nil {
			if !strings.HasPrefix(err.Error(), filterPrefix) {
				return fmt.Errorf("%T: refusal not in go-bexpr's words: %v", s.target, err)
			}
			continue
		}
		if perr != nil {
			return fmt.Errorf("%T: accepted, but does not parse within the budget: %v", s.target, perr)
		}
		if n := matchCount(ast.(bexpr.Expression)); n > filterMaxMatches {
			return fmt.Errorf("%T: accepted %d comparisons", s.target, n)
		}
		kept, all, err := s.run(&exprFilter{f: bf})
		if err != nil {
			return fmt.Errorf("%T: accepted, then failed on the entries: %v", s.target, err)
		}
		if kept > all {
			return fmt.Errorf("%T: kept %d of %d entries", s.target, kept, all)
		}
	}
	return nil
}

func FuzzFilter(f *testing.F) {
	for _, s := range filterSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if err := filterProblem(compileFilter, expr); err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
	})
}

// The filter property fails on a compile that skips the parse budget,
// the bound on comparisons, or the check of selectors against the type.
func TestFilterPropertyCatchesBrokenFilters(t *testing.T) {
	seed := func(prefix string) string {
		for _, s := range filterSeeds {
			if strings.HasPrefix(s, prefix) {
				return s
			}
		}
		t.Fatalf("no seed starts %q", prefix)
		return ""
	}
	config := &bexpr.EvaluatorConfig{MaxMatches: filterMaxMatches}
	for name, broken := range map[string]struct {
		compile func(string, any) (*bexpr.Filter, error)
		expr    string
	}{
		"no parse budget": {func(e string, target any) (*bexpr.Filter, error) {
			return bexpr.CreateFilter(e, config, target)
		}, seed("(((((((")},
		"no bound on comparisons": {func(e string, target any) (*bexpr.Filter, error) {
			return bexpr.CreateFilter(e, nil, target)
		}, seed("Node == a or ")},
		"no check against the type": {func(e string, _ any) (*bexpr.Filter, error) {
			return bexpr.CreateFilter(e, config, nil)
		}, seed("Foo == 1")},
	} {
		if filterProblem(broken.compile, broken.expr) == nil {
			t.Errorf("%s: the property passed on %.40q", name, broken.expr)
		}
	}
	for _, s := range filterSeeds {
		if err := filterProblem(compileFilter, s); err != nil {
			t.Errorf("compileFilter on %.60q: %v", s, err)
		}
	}
}

// FuzzFilterHandler sends any expression to every filtered read: it
// answers 200 with entries the unfiltered read also has, or a one-line
// 400 in go-bexpr's words, and changes nothing.
func FuzzFilterHandler(f *testing.F) {
	for i, s := range filterSeeds {
		f.Add(uint8(i), s)
	}
	paths := []string{"/v1/catalog/nodes", "/v1/catalog/services", "/v1/catalog/service/redis",
		"/v1/catalog/node/n1", "/v1/catalog/node-services/n1", "/v1/health/node/n1",
		"/v1/health/checks/redis", "/v1/health/state/any", "/v1/health/service/redis"}
	f.Fuzz(func(t *testing.T, which uint8, expr string) {
		h, store := fuzzServer(t)
		if _, err := store.Apply(model.Command{Register: &model.Register{Node: "n1", Address: "10.0.0.1",
			NodeMeta: map[string]string{"env": "prod"},
			Services: []model.ServiceSpec{{ID: "redis", Service: "redis", Tags: []string{"primary"}, Port: 6379}},
			Checks: []model.CheckSpec{{CheckID: "svc", Name: "svc", Status: model.HealthWarning, ServiceID: "redis"},
				{CheckID: "disk", Name: "disk", Status: model.HealthPassing}}}}); err != nil {
			t.Fatal(err)
		}
		path := paths[int(which)%len(paths)]
		before := store.Hash()
		rec := serve(h, http.MethodGet, path+"?filter="+url.QueryEscape(expr), nil)
		if store.Hash() != before {
			t.Fatalf("%s %q changed the state", path, expr)
		}
		switch rec.Code {
		case http.StatusOK:
			all := serve(h, http.MethodGet, path, nil)
			if err := subsetAnswer(rec.Body.Bytes(), all.Body.Bytes()); err != nil {
				t.Fatalf("%s %q: %v", path, expr, err)
			}
		case http.StatusBadRequest:
			if msg := rec.Body.String(); !strings.HasPrefix(msg, filterPrefix) || strings.Contains(strings.TrimSpace(msg), "\n") {
				t.Fatalf("%s %q: refusal %q", path, expr, msg)
			}
		default:
			t.Fatalf("%s %q: %d %q", path, expr, rec.Code, rec.Body)
		}
	})
}

// subsetAnswer checks that a filtered answer holds only what the
// unfiltered one does: a list's entries, a map's keys, or the Services of
// a node answer.
func subsetAnswer(filtered, all []byte) error {
	var fv, av any
	if err := json.Unmarshal(filtered, &fv); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	if err := json.Unmarshal(all, &av); err != nil {
		return fmt.Errorf("unfiltered answer: %w", err)
	}
	if fm, ok := fv.(map[string]any); ok {
		if _, node := fm["Services"]; node {
			fv, av = fm["Services"], av.(map[string]any)["Services"]
		}
	}
	switch f := fv.(type) {
	case []any:
		a, _ := av.([]any)
		j := 0
		for _, e := range f {
			for j < len(a) && fmt.Sprint(a[j]) != fmt.Sprint(e) {
				j++
			}
			if j == len(a) {
				return fmt.Errorf("entry %v is not in the unfiltered answer, in order", e)
			}
			j++
		}
	case map[string]any:
		a, _ := av.(map[string]any)
		for k := range f {
			if _, ok := a[k]; !ok {
				return fmt.Errorf("key %q is not in the unfiltered answer", k)
			}
		}
	case nil:
		if av != nil {
			return fmt.Errorf("null where the unfiltered answer has %v", av)
		}
	default:
		return fmt.Errorf("unexpected answer %v", fv)
	}
	return nil
}
