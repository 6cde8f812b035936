package httpapi

import (
	"net/url"
	"strings"
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
	if err := metaLimits("Node meta filter", f); err != nil {
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

// matchesNode applies the filter to a catalog node. The catalog keeps no
// node meta (a register's NodeMeta is ignored), so every node's is empty.
func (f nodeMetaFilter) matchesNode() bool { return f.matches(nil) }
