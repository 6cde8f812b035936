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

// checkAgentRecordWritten (S63): every client agent gets its record into
// the catalog. An agent's first full sync runs at its start and writes the
// record; a sync that fails (no leader yet) is retried within
// Bounds.AgentSync. So once a leader could be in place (Election after the
// start, or after the last fault that may block the agent, blockingFault)
// and AgentSync plus Slack have passed, the most advanced server's final
// state (the incarnation that applied the highest index) must hold the
// agent's node with the key every agent adds. An agent whose host is down
// at the end, or whose node left the catalog or lost its record on that
// server during the run, is not judged here: a lost record comes back at
// the next full sync, which a run may end before (the safety half,
// checkAgentRecord, judges the loss itself).
func checkAgentRecordWritten(ix *traceIndex) []Violation {
	b := ix.hdr.Bounds
	if len(ix.hdr.Agents) == 0 || b.AgentSync <= 0 {
		return nil
	}
	type book struct {
		has   map[string]bool
		lost  map[string]bool
		index uint64
	}
	books := map[serverInc]*book{}
	var final *book
	var finalServer string
	for _, o := range ix.Obs {
		sv := o.inc()
		bk := books[sv]
		if bk == nil {
			bk = &book{has: map[string]bool{}, lost: map[string]bool{}}
			books[sv] = bk
		}
		for _, n := range o.Obs.GoneNodes {
			if bk.has[n] {
				bk.lost[n] = true
			}
			delete(bk.has, n)
		}
		for n, meta := range o.Obs.NodeMeta {
			_, has := meta[agent.MetaSegment]
			if bk.has[n] && !has {
				bk.lost[n] = true
			}
			bk.has[n] = has
		}
		bk.index = o.Obs.Index
		if final == nil || bk.index >= final.index {
			final, finalServer = bk, o.Server
		}
	}
	var out []Violation
	for _, node := range ix.hdr.Agents {
		calm, down := b.Election, false // the first leader, at the start
		for _, iv := range blockingSpans(ix, node) {
			if iv.End < 0 {
				down = true
				break
			}
			calm = max(calm, iv.End+b.Election)
		}
		deadline := calm + b.AgentSync + b.Slack
		if down || deadline > ix.end {
			continue
		}
		if final == nil {
			out = append(out, violation(ix.end, "no server applied any entry, so agent %s's node record never reached the catalog (S63)", node))
			continue
		}
		if !final.has[node] && !final.lost[node] {
			out = append(out, violation(ix.end, "%s (index %d, the most advanced state) has no record from agent %s at the end, though nothing blocked the agent from %v on (S63)",
				finalServer, final.index, node, calm))
		}
	}
	return out
}
