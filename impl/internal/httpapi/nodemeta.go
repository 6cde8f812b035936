package httpapi

import (
	"net/url"
	"strings"

	"github.com/tenurekv/tenure/model"
)

// nodeMetaFilter is the repeatable ?node-meta=key:value of the catalog and
// health reads: an entry is listed only if its node carries every pair.
// Ignoring the filter would hand `consul catalog nodes -node-meta …` and
// consul-template's node-meta queries every node instead of none.
type nodeMetaFilter map[string]string

// nodeMetaParams reads ?node-meta. As in Consul the pair splits at its first
// colon, and a pair without one asks for the key with an empty value.
func nodeMetaParams(v url.Values) (nodeMetaFilter, error) {
	pairs := v["node-meta"]
	if len(pairs) == 0 {
		return nil, nil
	}
	f := nodeMetaFilter{}
	for _, p := range pairs {
		key, value, _ := strings.Cut(p, ":")
		f[key] = value
	}
	if err := metaLimits("Node meta filter", f, maxNodeMeta); err != nil {
		return nil, err
	}
	return f, nil
}

// readParams is the opening of a catalog or health list read: the
// consistency and blocking options, then ?node-meta.
func readParams(c *call) (queryOpts, nodeMetaFilter, error) {
	q, err := parseQuery(c.query())
	if err != nil {
		return q, nil, err
	}
	meta, err := nodeMetaParams(c.query())
	return q, meta, err
}

// matches says whether a node with meta passes the filter: each wanted key
// must be present with the wanted value.
func (f nodeMetaFilter) matches(meta map[string]string) bool {
	for k, want := range f {
		if got, ok := meta[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// nodeMatches applies the filter to the node named node.
func (f nodeMetaFilter) nodeMatches(s *model.State, node string) bool {
	if len(f) == 0 {
		return true
	}
	n, _ := s.Node(node)
	return f.matches(n.Meta)
}

// checks keeps the checks on nodes that pass the filter.
func (f nodeMetaFilter) checks(s *model.State, all []model.Check) []model.Check {
	if len(f) == 0 {
		return all
	}
	var out []model.Check
	for _, c := range all {
		if f.nodeMatches(s, c.Node) {
			out = append(out, c)
		}
	}
	return out
}

// serviceNames is /v1/catalog/services' answer over the nodes that pass the
// filter: each service name with the union of its instances' tags.
func (f nodeMetaFilter) serviceNames(s *model.State) map[string][]string {
	if len(f) == 0 {
		return s.ServiceNames(nil)
	}
	return s.ServiceNames(func(n model.Node) bool { return f.matches(n.Meta) })
}
