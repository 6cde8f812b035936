package httpapi

import (
	"math"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/model"
)

// Sorting by network distance (S89): ?near on catalog and health reads,
// and a prepared query's Near.

// nearParam is the node a read's ?near names, "_agent" meaning the node
// of the agent the client talked to; "" when the read names none.
func (h *handler) nearParam(c *call) string {
	return h.nearNode(c, c.query().Get("near"))
}

// nearNode resolves "_agent" to the agent's node; "_ip" names no node
// here (Consul finds the node whose address is the caller's IP, which a
// forwarded request no longer shows), so it sorts nothing.
func (h *handler) nearNode(c *call, near string) string {
	switch near {
	case "_agent":
		return h.origin(c)
	case "_ip":
		return ""
	}
	return near
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
