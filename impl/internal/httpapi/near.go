package httpapi

import (
	"math"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// Sorting by network distance (S89): ?near on catalog and health reads,
// and a prepared query's Near.

// nearParam is the node a read's ?near names, "_agent" meaning the node
// of the agent the client talked to; "" when the read names none.
func (h *handler) nearParam(c *call) string {
	return h.nearNode(c, c.query().Get("near"))
}

// nearNode resolves "_agent" to the agent's node. On a catalog or health
// read "_ip" names no node, as on Consul, so it sorts nothing; a prepared
// query resolves it first (queryNear).
func (h *handler) nearNode(c *call, near string) string {
	switch near {
	case "_agent":
		return h.origin(c)
	case "_ip":
		return ""
	}
	return near
}

// queryNear is the node a prepared query's execution sorts from: its
// ?near or else its Near, where "_ip" is the first node, by name, whose
// address is the caller's (Consul's order), or none.
func (h *handler) queryNear(c *call, s *model.State, near string) string {
	if near != "_ip" {
		return h.nearNode(c, near)
	}
	ip := callerSourceIP(c.r)
	if ip == "" {
		return ""
	}
	found := ""
	for _, n := range s.Nodes() {
		if n.Address == ip && (found == "" || strings.ToLower(n.Name) < strings.ToLower(found)) {
			found = n.Name
		}
	}
	return found
}

// callerSourceIP is the caller's address: the one its Origin carries when
// another agent forwarded the request here, else the first X-Forwarded-For
// entry that is an IP, else the connection's, as Consul reads it.
func callerSourceIP(r *http.Request) string {
	if o, ok := rpc.OriginFrom(r.Context()); ok {
		return o.SourceIP
	}
	first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-For"), ",")
	if ip := net.ParseIP(strings.TrimSpace(first)); ip != nil {
		return ip.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return ""
}

// wantsSourceIP reports whether a forwarded request's handler may read the
// caller's address: only a prepared query's execution does, and other
// requests are framed as before it travelled.
func wantsSourceIP(path string) bool {
	return strings.HasPrefix(path, "/v1/query/") && strings.HasSuffix(path, "/execute")
}

// sortNear orders items by the estimated round trip from source's node,
// nearest first, as Consul does: a stable sort, so equal distances keep
// the order the read had, and nodes without a coordinate last. A source
// without a coordinate sorts nothing.
func sortNear[T any](s *model.State, source string, items []T, node func(T) string) {
	if source == "" || len(items) < 2 {
		return
	}
	from := s.NodeCoordinates(source)
	if len(from) == 0 {
		return
	}
	type ranked struct {
		dist float64
		item T
	}
	// One pass over the table, not one per item: a read may list every
	// node of a large catalog.
	sets := s.CoordinateSets()
	memo := map[string]float64{}
	rs := make([]ranked, len(items))
	for i, it := range items {
		n := node(it)
		d, ok := memo[n]
		if !ok {
			d = model.SetDistance(from, sets[n])
			if math.IsNaN(d) {
				d = math.Inf(1)
			}
			memo[n] = d
		}
		rs[i] = ranked{d, it}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		switch {
		case a.dist < b.dist:
			return -1
		case a.dist > b.dist:
			return 1
		}
		return 0
	})
	for i := range rs {
		items[i] = rs[i].item
	}
}

// frontNode moves the entry on node to the front when it is among the
// first ten, as Consul's prepared-query execute does after a distance
// sort, so the agent's own instance comes first.
func frontNode[T any](items []T, node string, nodeOf func(T) string) {
	for i := 0; i < len(items) && i < 10; i++ {
		if strings.EqualFold(nodeOf(items[i]), node) {
			items[0], items[i] = items[i], items[0]
			return
		}
	}
}
