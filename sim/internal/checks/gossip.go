package checks

import (
	"strings"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// linkFault is a stretch of time in which servers' links were faulty, and
// the node whose failure it excuses ("" for every node).
type linkFault struct {
	start, end time.Duration // end -1: still running when the run ended
	only       string
}

// linkFaults lists the faults that make servers' links unhealthy. A fault
// among the servers (a partition, an isolation, flapping, a pause, a crash)
// makes every server's links to its target unhealthy, and the target's
// stale view can reach the others after the heal (memberlist trusts a
// peer's report that a node died until that node refutes it), so it
// excuses every server; the injected false positive excuses only its
// target. Client faults and clock faults touch no server link.
func linkFaults(ix *traceIndex) []linkFault {
	excuses := func(s *core.Event, end time.Duration) (linkFault, bool) {
		switch s.Fault.Kind {
		case core.FaultPartition, core.FaultLeaderIsolation, core.FaultFlapping, core.FaultServerPause,
			core.FaultCrashRestart, core.FaultLeaderKill, core.FaultPoolLoss, core.FaultOneWay:
			return linkFault{start: s.At, end: end}, true
		case core.FaultFalsePositive:
			if len(s.Fault.Targets) == 1 {
				return linkFault{start: s.At, end: end, only: s.Fault.Targets[0]}, true
			}
		}
		return linkFault{}, false
	}
	var out []linkFault
	starts := map[int]*core.Event{}
	for _, e := range ix.faults {
		switch e.Fault.Phase {
		case "start":
			starts[e.Fault.ID] = e
		case "end":
			if s := starts[e.Fault.ID]; s != nil {
				delete(starts, e.Fault.ID)
				if f, ok := excuses(s, e.At); ok {
					out = append(out, f)
				}
			}
		}
	}
	for _, s := range starts {
		if f, ok := excuses(s, -1); ok {
			out = append(out, f)
		}
	}
	return out
}

// checkNoFailureOnHealthyLinks (S53): gossip declares a server failed, and
// the leader sets its serfHealth critical, only while servers' links are
// faulty. Every change of a serfHealth to critical must fall inside a link
// fault that excuses its node (linkFaults), or within Detect plus Slack
// after it ended (memberlist may still be finishing its suspicion, or
// spreading a stale report). One outside them is the detector failing a
// server whose links are healthy.
func checkNoFailureOnHealthyLinks(ix *traceIndex) []Violation {
	faults := linkFaults(ix)
	grace := ix.hdr.Bounds.Detect + ix.hdr.Bounds.Slack
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
			if !excused(node, o.At) {
				out = append(out, violation(o.At, "%s: %s's serfHealth went critical at index %d with every server link healthy: a false positive of the detector", o.Server, node, o.Obs.Index))
			}
		}
	}
	return out
}
