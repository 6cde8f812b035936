package checks

import (
	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// recordBook follows which catalog nodes carry their agent's record (meta
// with agent.MetaSegment, the key every agent adds) on one server
// incarnation. Each observation is the change from the state before it,
// a snapshot restore's included, so applying them in order keeps the book
// exact; an incarnation starts from an empty state.
type recordBook struct {
	has   map[string]bool
	lost  map[string]bool // had the record, then lost it or left the catalog
	index uint64          // the last index applied
}

// recordBooks returns the book of o's server incarnation, made on first use.
func recordBooks() func(o obsAt) *recordBook {
	books := map[serverInc]*recordBook{}
	return func(o obsAt) *recordBook {
		bk := books[o.inc()]
		if bk == nil {
			bk = &recordBook{has: map[string]bool{}, lost: map[string]bool{}}
			books[o.inc()] = bk
		}
		return bk
	}
}

// apply takes one observation and returns the nodes whose record it took
// while they stayed in the catalog, in name order. A node that left the
// catalog (a deregistration, or a rename in the same entry) is not one.
func (bk *recordBook) apply(obs *core.StateObs) (taken []string) {
	for _, n := range obs.GoneNodes {
		if bk.has[n] {
			bk.lost[n] = true
		}
		delete(bk.has, n)
	}
	for _, n := range core.SortedMapKeys(obs.NodeMeta) {
		_, has := obs.NodeMeta[n][agent.MetaSegment]
		if bk.has[n] && !has {
			bk.lost[n] = true
			taken = append(taken, n)
		}
		bk.has[n] = has
	}
	bk.index = obs.Index
	return taken
}

// checkAgentRecord (S63, S62): only an agent writes its node's record
// whole; the leader's reconcile, the agents' service and check writes and a
// failed member's register leave it as it is. So once a server's state has
// an agent's record, no later entry on that server may take it away unless
// the node itself left the catalog in between (a deregistration or a
// rename; the reconcile then registers the node anew without it, until the
// agent writes its record again). A snapshot restore may: it puts back an
// older state whole.
func checkAgentRecord(ix *traceIndex) []Violation {
	book := recordBooks()
	var out []Violation
	for _, o := range ix.Obs {
		taken := book(o).apply(o.Obs)
		if o.Obs.Restored {
			continue
		}
		ix.judge(len(o.Obs.NodeMeta) + len(o.Obs.GoneNodes))
		for _, n := range taken {
			out = append(out, violation(o.At, "%s: index %d took node %s's record from its agent (meta now %v) (S63)",
				o.Server, o.Obs.Index, n, o.Obs.NodeMeta[n]))
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
// checkAgentRecord, judges the loss itself). A seeded run waits out this
// bound after its faults while a running agent's record is missing from the
// leader (workload.awaitAgentRecords), so a missing record is judged however
// late the last fault healed; agent-records-dropped in TestTeeth relies on it.
func checkAgentRecordWritten(ix *traceIndex) []Violation {
	b := ix.hdr.Bounds
	if len(ix.hdr.Agents) == 0 || b.AgentSync <= 0 {
		return nil
	}
	book := recordBooks()
	var final *recordBook
	var finalServer string
	for _, o := range ix.Obs {
		bk := book(o)
		bk.apply(o.Obs)
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
		ix.judge(1)
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
