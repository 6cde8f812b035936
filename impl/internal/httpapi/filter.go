package httpapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/go-bexpr"
)

// ?filter (S66): the catalog, health and agent reads Consul filters take a
// go-bexpr expression over the entries they answer and keep those it
// selects. tenure evaluates it with go-bexpr v0.1.2, Consul 1.22's version,
// so an expression parses, names fields and compares values exactly as on
// Consul, over the types of filtertypes.go. Two bounds Consul lacks keep one
// request from taking a server's CPU (DESIGN.md "Bad input and bad
// clients"): the parser backtracks, and its work grows fourfold with every
// level of parentheses (12 levels, 30 bytes, parse for minutes), so an
// expression must parse within filterParseBudget of the parser's steps;
// and evaluation costs every entry every match, so an expression may hold
// at most filterMaxMatches of them.
const (
	// filterParseBudget admits six levels of nested parentheses and 60 KiB
	// of plain comparisons (about 0.2 s of parsing on a laptop core); real
	// expressions take a few thousand steps.
	filterParseBudget = 1 << 20
	// filterMaxMatches bounds the comparisons in one expression. go-bexpr
	// v0.1.2 means to bound them at 32 but never applies its default.
	filterMaxMatches = 512
)

// filterPrefix starts every refusal of an expression, as go-bexpr words it.
const filterPrefix = "Failed to create boolean expression evaluator: "

// exprFilter is a request's parsed ?filter, bound to the type its endpoint
// selects on. A nil *exprFilter keeps everything.
type exprFilter struct {
	f *bexpr.Filter
}

// The element types the endpoints filter, as zero slices (go-bexpr takes
// the element type of a slice).
var (
	onNodes        = []nodeFilter(nil)
	onServiceNodes = []serviceNodeFilter(nil)
	onNodeServices = []nodeServiceFilter(nil)
	onChecks       = []healthCheckFilter(nil)
	onHealthEntry  = []checkServiceNodeFilter(nil)
	onAgentService = []agentServiceFilter(nil)
	onMembers      = []memberFilter(nil)
)

// parseFilter reads ?filter for an endpoint whose entries are of the
// element type of target. No filter, or an empty one, gives nil, as in
// Consul; an expression that does not parse, names a field the type lacks,
// compares a field in a way its type does not allow, or is over the bounds
// is refused with 400 and go-bexpr's reason.
func parseFilter(v url.Values, target any) (*exprFilter, error) {
	expr := v.Get("filter")
	if expr == "" {
		return nil, nil
	}
	f, err := compileFilter(expr, target)
	if err != nil {
		return nil, &apiError{status: http.StatusBadRequest, msg: oneLine(err.Error())}
	}
	return &exprFilter{f: f}, nil
}

// filterParam is parseFilter answering Consul's 500 in the compat profile.
func (h *handler) filterParam(c *call, target any) (*exprFilter, error) {
	f, err := parseFilter(c.query(), target)
	if ae, ok := err.(*apiError); ok && h.opts.Compat {
		ae.status = http.StatusInternalServerError
	}
	return f, err
}

// compileFilter bounds the expression's parse, then builds go-bexpr's
// filter for target. The first parse runs with the step budget, so an
// expression that would run away stops there; go-bexpr parses again
// (unbounded, but now known to be cheap) and checks the selectors and
// values against the type. A panic inside go-bexpr is a refusal too.
func compileFilter(expr string, target any) (f *bexpr.Filter, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("%s%v", filterPrefix, r)
		}
	}()
	if _, perr := bexpr.Parse("", []byte(expr), bexpr.MaxExpressions(filterParseBudget)); perr != nil &&
		strings.Contains(perr.Error(), "max number of expresssions parsed") { // the parser's words, sic
		return nil, fmt.Errorf("%sexpression too complex: parsing it took more than %d steps", filterPrefix, filterParseBudget)
	}
	return bexpr.CreateFilter(expr, &bexpr.EvaluatorConfig{MaxMatches: filterMaxMatches}, target)
}

// positioned is a filter type that knows which answer entry it shows.
type positioned interface{ position() int }

func (v nodeFilter) position() int             { return v.at }
func (v serviceNodeFilter) position() int      { return v.at }
func (v nodeServiceFilter) position() int      { return v.at }
func (v healthCheckFilter) position() int      { return v.at }
func (v checkServiceNodeFilter) position() int { return v.at }
func (v agentServiceFilter) position() int     { return v.at }
func (v memberFilter) position() int           { return v.at }

// keep returns the entries of items the filter selects, in their order;
// view shows entry i as its filter type, at position i.
func keep[T any, V positioned](f *exprFilter, items []T, view func(i int, item T) V) ([]T, error) {
	if f == nil {
		return items, nil
	}
	views := make([]V, len(items))
	for i, it := range items {
		views[i] = view(i, it)
	}
	kept, err := execute(f.f, views)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(kept))
	for _, v := range kept {
		out = append(out, items[v.position()])
	}
	return out, nil
}

// keepByKey is keep for an answer keyed by ID (agent services and checks).
func keepByKey[T any, V positioned](f *exprFilter, m map[string]T, view func(i int, item T) V) (map[string]T, error) {
	if f == nil {
		return m, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	views := make([]V, len(keys))
	for i, k := range keys {
		views[i] = view(i, m[k])
	}
	kept, err := execute(f.f, views)
	if err != nil {
		return nil, err
	}
	out := make(map[string]T, len(kept))
	for _, v := range kept {
		k := keys[v.position()]
		out[k] = m[k]
	}
	return out, nil
}

// execute runs go-bexpr over views. The types of filtertypes.go leave it
// nothing to fail on; an error or a panic all the same answers 400 with
// its reason rather than taking the request down.
func execute[V any](f *bexpr.Filter, views []V) (kept []V, err error) {
	defer func() {
		if r := recover(); r != nil {
			kept, err = nil, errorf(http.StatusBadRequest, "Failed to evaluate the filter: %v", r)
		}
	}()
	raw, err := f.Execute(views)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Failed to evaluate the filter: %s", oneLine(err.Error()))
	}
	return raw.([]V), nil
}

// apply narrows a read's answer. Every answer type a filtered read builds
// has a case; any other is a programming error.
func (f *exprFilter) apply(body any) (any, error) {
	switch b := body.(type) {
	case []nodeJSON:
		return keep(f, b, viewNode)
	case []serviceNodeJSON:
		return keep(f, b, viewServiceNode)
	case serviceInstancesJSON:
		kept, err := keep(f, []serviceNodeJSON(b), viewServiceNode)
		if err != nil {
			return nil, err
		}
		return serviceTags(kept), nil
	case nodeServicesJSON:
		if b.Node == nil {
			return b, nil
		}
		var err error
		b.Services, err = keepByKey(f, b.Services, viewNodeService)
		return b, err
	case nodeServiceListJSON:
		if b.Node == nil {
			return b, nil
		}
		var err error
		b.Services, err = keep(f, b.Services, viewNodeService)
		return b, err
	case []checkJSON:
		return keep(f, b, viewCheck)
	case []healthEntryJSON:
		return keep(f, b, viewHealthEntry)
	case json.RawMessage: // a catalog node read of an unknown node: null
		return b, nil
	}
	return nil, fmt.Errorf("filter: no filter type for a %T answer", body)
}

func viewNode(i int, n nodeJSON) nodeFilter {
	return nodeFilter{ID: n.ID, Node: n.Node, Address: n.Address, Datacenter: n.Datacenter,
		TaggedAddresses: n.TaggedAddresses, Meta: n.Meta, at: i}
}

func viewServiceNode(i int, s serviceNodeJSON) serviceNodeFilter {
	return serviceNodeFilter{ID: s.ID, Node: s.Node, Address: s.Address, Datacenter: s.Datacenter,
		TaggedAddresses: s.TaggedAddresses, NodeMeta: s.NodeMeta, ServiceKind: s.ServiceKind,
		ServiceID: s.ServiceID, ServiceName: s.ServiceName, ServiceTags: s.ServiceTags,
		ServiceAddress: s.ServiceAddress, ServiceWeights: weightsFilter(s.ServiceWeights),
		ServiceMeta: s.ServiceMeta, ServicePort: s.ServicePort,
		ServiceEnableTagOverride: s.ServiceEnableTagOverride, at: i}
}

func viewNodeService(i int, s nodeServiceJSON) nodeServiceFilter {
	return nodeServiceFilter{ID: s.ID, Service: s.Service, Tags: s.Tags, Address: s.Address,
		Meta: s.Meta, Port: s.Port, Weights: weightsFilter(s.Weights),
		EnableTagOverride: s.EnableTagOverride, at: i}
}

func viewCheck(i int, c checkJSON) healthCheckFilter {
	return healthCheckFilter{Node: c.Node, CheckID: c.CheckID, Name: c.Name, Status: string(c.Status),
		Notes: c.Notes, Output: c.Output, ServiceID: c.ServiceID, ServiceName: c.ServiceName,
		ServiceTags: c.ServiceTags, Type: c.Type, Interval: c.Interval, Timeout: c.Timeout,
		ExposedPort: c.ExposedPort, at: i}
}

func viewHealthEntry(i int, e healthEntryJSON) checkServiceNodeFilter {
	v := checkServiceNodeFilter{Service: viewNodeService(0, e.Service), at: i}
	if e.Node != nil {
		v.Node = viewNode(0, *e.Node)
	}
	for j, c := range e.Checks {
		v.Checks = append(v.Checks, viewCheck(j, c))
	}
	return v
}

func viewAgentService(i int, s agentServiceJSON) agentServiceFilter {
	return agentServiceFilter{ID: s.ID, Service: s.Service, Tags: s.Tags, Meta: s.Meta, Port: s.Port,
		Address: s.Address, Weights: weightsFilter(s.Weights), EnableTagOverride: s.EnableTagOverride, at: i}
}

func viewMember(i int, m memberJSON) memberFilter {
	return memberFilter{Name: m.Name, Addr: net.ParseIP(m.Addr), Port: m.Port, Tags: m.Tags, Status: m.Status,
		ProtocolMin: m.ProtocolMin, ProtocolMax: m.ProtocolMax, ProtocolCur: m.ProtocolCur,
		DelegateMin: m.DelegateMin, DelegateMax: m.DelegateMax, DelegateCur: m.DelegateCur, at: i}
}

// serviceInstancesJSON is /v1/catalog/services' read before a filter:
// every instance, as Consul filters them one by one before it groups them
// by name.
type serviceInstancesJSON []serviceNodeJSON

// serviceTags groups the instances a filter kept by service name, each
// with the union of their tags (sorted, [] for none), as
// model.State.ServiceNames does for the unfiltered read.
func serviceTags(instances []serviceNodeJSON) map[string][]string {
	out := map[string][]string{}
	for _, in := range instances {
		tags := append(out[in.ServiceName], in.ServiceTags...)
		slices.Sort(tags)
		out[in.ServiceName] = slices.Compact(tags)
		if out[in.ServiceName] == nil {
			out[in.ServiceName] = []string{}
		}
	}
	return out
}
