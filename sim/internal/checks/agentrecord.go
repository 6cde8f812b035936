package checks

import (
	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// checkAgentRecord (S63, S62): only an agent writes its node's record
// whole; the leader's reconcile, the agents' service and check writes and a
// failed member's register leave it as it is. So once a server's state has
// a node whose meta carries the key every agent adds
// (agent.MetaSegment), no later entry on that server may take it away
// unless the node itself left the catalog in between (a deregistration or
// a rename; the reconcile then registers the node anew without it, until
// the agent writes its record again). Each server incarnation starts from
// an empty state, and a snapshot restore replaces the state whole, so
// either starts the server's book afresh.
func checkAgentRecord(ix *traceIndex) []Violation {
	recorded := map[serverInc]map[string]bool{} // nodes whose record the server has
	var out []Violation
	for _, o := range ix.Obs {
		sv := o.inc()
		if o.Obs.Restored || recorded[sv] == nil {
			recorded[sv] = map[string]bool{}
		}
		book := recorded[sv]
		for _, n := range o.Obs.GoneNodes {
			delete(book, n)
		}
		for _, n := range core.SortedMapKeys(o.Obs.NodeMeta) {
			meta := o.Obs.NodeMeta[n]
			_, has := meta[agent.MetaSegment]
			if book[n] && !has && !o.Obs.Restored {
				out = append(out, violation(o.At, "%s: index %d took node %s's record from its agent (meta now %v) (S63)",
					o.Server, o.Obs.Index, n, meta))
			}
			book[n] = has
		}
	}
	return out
}
