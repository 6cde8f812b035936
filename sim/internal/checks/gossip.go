package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// linkFault is a stretch of time in which links in the gossip pool were
// faulty, and the node whose failure it excuses ("" for every node).
type linkFault struct {
	start, end time.Duration // end -1: still running when the run ended
	only       string
}

// linkFaults lists the faults that make links in the pool unhealthy. A
// fault on a member's links (a partition, an isolation, flapping, a pause,
// a crash of a server, loss or a one-way cut, a slow agent, a paused or
// cut-off client host) makes the others' links to it unhealthy, and its own stale
// view can reach the others after the heal (memberlist trusts a peer's
// report that a node died until that node refutes it), so it excuses every
// node. A crashed client agent says nothing more once dead, and the
// injected false positive is written by hand: each excuses only its
// target. Clock faults and a client's slow link to the resources touch no
// pool link.
func linkFaults(ix *traceIndex) []linkFault {
	agents := map[string]bool{}
	for _, a := range ix.hdr.Agents {
		agents[a] = true
	}
	excuses := func(s *core.Event, end time.Duration) (linkFault, bool) {
		switch s.Fault.Kind {
		case core.FaultPartition, core.FaultLeaderIsolation, core.FaultFlapping, core.FaultServerPause,
			core.FaultCrashRestart, core.FaultLeaderKill, core.FaultPoolLoss, core.FaultOneWay,
			core.FaultSlowAgent, core.FaultClientPause, core.FaultClientPartition, core.FaultPowerLoss, core.FaultFsyncError:
			return linkFault{start: s.At, end: end}, true
		case core.FaultFalsePositive:
			if len(s.Fault.Targets) == 1 {
				return linkFault{start: s.At, end: end, only: s.Fault.Targets[0]}, true
			}
		case core.FaultClientCrash:
			for _, t := range s.Fault.Targets {
				if agents[t] {
					return linkFault{start: s.At, end: end, only: t}, true
				}
			}
		}
		return linkFault{}, false
	}
	var out []linkFault
	for _, f := range ix.faultSpans() {
		if lf, ok := excuses(f.Start, f.End); ok {
			out = append(out, lf)
		}
	}
	return out
}

// checkNoFailureOnHealthyLinks (S53): gossip declares a member (a server,
// or a client agent: a live holder's node) failed, and the leader sets its
// serfHealth critical, only while links in the pool are faulty. Every
// change of a serfHealth to critical must fall inside a link fault that
// excuses its node (linkFaults), or within the longer of Detect and
// StaleView, plus Slack, after it ended (memberlist may still be finishing
// a suspicion it began during the fault, or spreading a stale report). One
// outside them is the detector failing a member whose links are healthy.
func checkNoFailureOnHealthyLinks(ix *traceIndex) []Violation {
	faults := linkFaults(ix)
	b := ix.hdr.Bounds
	grace := max(b.Detect, b.StaleView) + b.Slack
	excused := func(node string, at time.Duration) bool {
		for _, f := range faults {
			if (f.only == "" || f.only == node) && f.start <= at && (f.end < 0 || at <= f.end+grace) {
				return true
			}
		}
		return false
	}
	var out []Violation
	seen := map[string]bool{}
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for nc, st := range o.Obs.Checks {
			node, check, _ := strings.Cut(nc, "/")
			if check != model.SerfHealthCheckID || st != model.HealthCritical {
				continue
			}
			key := nc + "@" + time.Duration(o.Obs.Index).String()
			if seen[key] {
				continue // the same entry applied on another server
			}
			seen[key] = true
			ix.judge(1)
			if !excused(node, o.At) {
				out = append(out, violation(o.At, "%s: %s's serfHealth went critical at index %d with every link in the pool healthy: a false positive of the detector", o.Server, node, o.Obs.Index))
			}
		}
	}
	return out
}

// serfCritical is one change of a node's check to critical (serfHealth
// unless check says otherwise): its raft index and when the cluster first
// applied it.
type serfCritical struct {
	node  string
	check string
	index uint64
	at    time.Duration
}

// serfCriticals lists every change of a serfHealth to critical, once per
// raft index, in applied order.
func serfCriticals(ix *traceIndex) []serfCritical {
	return slices.DeleteFunc(checkCriticals(ix), func(c serfCritical) bool { return c.check != model.SerfHealthCheckID })
}

// checkCriticals lists every change of any check to critical, once per
// raft index, in applied order.
func checkCriticals(ix *traceIndex) []serfCritical {
	var out []serfCritical
	seen := map[string]bool{}
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for _, nc := range core.SortedMapKeys(o.Obs.Checks) {
			node, check, _ := strings.Cut(nc, "/")
			if o.Obs.Checks[nc] != model.HealthCritical {
				continue
			}
			key := fmt.Sprintf("%s@%d", nc, o.Obs.Index)
			if !seen[key] {
				seen[key] = true
				out = append(out, serfCritical{node: node, check: check, index: o.Obs.Index, at: o.At})
			}
		}
	}
	return out
}

// agentCrashes says when each client agent was killed (absent: never).
func agentCrashes(ix *traceIndex) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, a := range ix.hdr.Agents {
		if cs := ix.crashes[a]; len(cs) > 0 {
			out[a] = cs[0]
		}
	}
	return out
}

// serfSessions lists the sessions created through node's agent (or for
// node) and bound to its serfHealth, with the raft index that created each.
func serfSessions(ix *traceIndex) map[string][]model.Session {
	return boundSessions(ix, model.SerfHealthCheckID)
}

// boundSessions lists, per node, the sessions bound to that node's check.
func boundSessions(ix *traceIndex, check string) map[string][]model.Session {
	out := map[string][]model.Session{}
	seen := map[string]bool{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.NewSess {
			if !seen[s.ID] && slices.Contains(s.CheckIDs(), check) {
				seen[s.ID] = true
				out[s.Node] = append(out[s.Node], s)
			}
		}
	}
	return out
}

// checkFalseDeadFenced (S43, S53, S56): a holder falsely declared dead
// (its client agent alive when its serfHealth, or any other check its
// session is bound to, such as an agent TTL check that lapsed while the
// holder was stalled, went critical) has every later fenced write
// rejected. For each such critical change, each session bound to that
// node's check and created before it is dead from then on: a
// write to the fenced resource with its sequencer is later if its
// check-sequencer was sent after the change was applied (txn mode), or if
// the resource had already accepted a higher lock index on the key (token
// mode); accepting one is a violation. A token-mode write before anyone
// else wrote carries no proof of staleness and is left to the other checks.
func checkFalseDeadFenced(ix *traceIndex) []Violation {
	crashed := agentCrashes(ix)
	bound := map[string]map[string][]model.Session{} // check → node → sessions
	// dead: session → when its node was first declared failed while alive.
	dead := map[string]serfCritical{}
	for _, c := range checkCriticals(ix) {
		if t, ok := crashed[c.node]; ok && t <= c.at {
			continue // truly dead: not a false positive
		}
		if bound[c.check] == nil {
			bound[c.check] = boundSessions(ix, c.check)
		}
		for _, s := range bound[c.check][c.node] {
			if _, ok := dead[s.ID]; !ok && s.CreateIndex < c.index {
				dead[s.ID] = c
			}
		}
	}
	var out []Violation
	maxLI := map[string]uint64{}
	for _, e := range ix.writes {
		w := e.Write
		if w.Resource != core.ResFenced {
			continue
		}
		if c, ok := dead[w.Seq.Session]; ok && e.At > c.at {
			ix.judge(1) // a write after the false death, accepted or not
		}
		if c, ok := dead[w.Seq.Session]; ok && w.Accepted {
			switch {
			case w.Mode == core.FenceTxn && w.CheckCall > c.at:
				out = append(out, violation(e.At, "%s accepted %s's write (session %s, check sent at %v) after its live node %s's %s went critical at %v (index %d)", core.ResFenced, w.Client, w.Seq.Session, w.CheckCall, c.node, c.check, c.at, c.index))
			case w.Mode == core.FenceToken && w.Seq.LockIndex < maxLI[w.Seq.Key]:
				out = append(out, violation(e.At, "%s accepted %s's write with lock index %d below %d, from session %s whose live node %s's %s went critical at %v", core.ResFenced, w.Client, w.Seq.LockIndex, maxLI[w.Seq.Key], w.Seq.Session, c.node, c.check, c.at))
			}
		}
		if w.Accepted {
			maxLI[w.Seq.Key] = max(maxLI[w.Seq.Key], w.Seq.LockIndex)
		}
	}
	return out
}

// holderStops lists, per client agent, when it stopped answering for good
// or for longer than Bounds.DeadAgent: killed, or its host paused.
func holderStops(ix *traceIndex) map[string]time.Duration {
	b := ix.hdr.Bounds
	out := agentCrashes(ix)
	agents := map[string]bool{}
	for _, a := range ix.hdr.Agents {
		agents[a] = true
	}
	starts := map[int]*core.Event{}
	for _, e := range ix.faults {
		if e.Fault.Kind != core.FaultClientPause {
			continue
		}
		if e.Fault.Phase == "start" {
			starts[e.Fault.ID] = e
			continue
		}
		s := starts[e.Fault.ID]
		if s == nil || e.At-s.At <= b.DeadAgent {
			continue
		}
		for _, t := range s.Fault.Targets {
			if at, ok := out[t]; agents[t] && (!ok || s.At < at) {
				out[t] = s.At
			}
		}
	}
	return out
}

// checkDeadHolderInvalidated (S12, S53): a failed holder's session is
// invalidated within Bounds.DeadAgent. When a client agent is killed (or
// its host paused for longer than the bound), every session bound to its
// serfHealth that still existed must be gone within DeadAgent
// (GossipDetectBound of the pool, an election and slack). A run that ends
// before the bound says nothing about it.
func checkDeadHolderInvalidated(ix *traceIndex) []Violation {
	b := ix.hdr.Bounds
	if b.DeadAgent <= 0 {
		return nil
	}
	goneAt := map[string]time.Duration{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.GoneSess {
			if t, ok := goneAt[s.ID]; !ok || o.At < t {
				goneAt[s.ID] = o.At
			}
		}
	}
	sessions := serfSessions(ix)
	createdAt := map[string]time.Duration{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.NewSess {
			if t, ok := createdAt[s.ID]; !ok || o.At < t {
				createdAt[s.ID] = o.At
			}
		}
	}
	var out []Violation
	stops := holderStops(ix)
	for _, node := range core.SortedMapKeys(stops) {
		at := stops[node]
		if ix.end < at+b.DeadAgent {
			continue
		}
		for _, s := range sessions[node] {
			if createdAt[s.ID] > at {
				continue
			}
			ix.judge(1)
			if g, ok := goneAt[s.ID]; ok && g <= at+b.DeadAgent {
				continue
			}
			out = append(out, violation(at+b.DeadAgent, "session %s bound to %s's serfHealth not invalidated within %v after its agent stopped at %v", s.ID, node, b.DeadAgent, at))
		}
	}
	return out
}
