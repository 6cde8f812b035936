package checks

import (
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// stopBound is how long a server may go on after its disk first failed an
// fsync: its next log write fails at once, and the workload writes every
// few hundred milliseconds.
const stopBound = 5 * time.Second

// checkStopsOnFailedSync: a server whose disk fails an fsync stops rather
// than go on (its log can no longer be made durable): after the first
// failed fsync of an fsync-error fault, the server stops itself within
// stopBound, unless the fault healed first (the heal restarts it on a
// working disk).
func checkStopsOnFailedSync(ix *traceIndex) []Violation {
	var out []Violation
	for _, e := range ix.events {
		if e.Kind != core.KindNote || !strings.HasPrefix(e.Msg, core.NoteSyncFailedPrefix) {
			continue
		}
		node, failed := e.Node, e.At
		heal := ix.faultEndAt(core.FaultFsyncError, node, failed)
		deadline := failed + stopBound
		if heal >= 0 && heal < deadline || ix.end < deadline {
			continue // healed, or the run ended, before the bound
		}
		ix.judge(1)
		if ix.stoppedWithin(node, failed, deadline) {
			continue
		}
		out = append(out, violation(failed, "%s went on for %v after its disk failed an fsync (%s) without stopping",
			node, stopBound, strings.TrimPrefix(e.Msg, core.NoteSyncFailedPrefix)))
	}
	return out
}

// stoppedWithin reports whether node stopped itself in [from, to].
func (ix *traceIndex) stoppedWithin(node string, from, to time.Duration) bool {
	for _, e := range ix.events {
		if e.Kind == core.KindNote && e.Node == node && e.At >= from && e.At <= to &&
			strings.HasPrefix(e.Msg, core.NoteStopsPrefix) {
			return true
		}
	}
	return false
}

// faultEndAt is when the fault of kind that targeted node and was under way
// at t healed; -1 if none was, or it never healed.
func (ix *traceIndex) faultEndAt(kind core.FaultKind, node string, t time.Duration) time.Duration {
	for _, f := range ix.faultSpans() {
		if f.Start.Fault.Kind == kind && f.Start.At <= t && (f.End < 0 || t <= f.End) &&
			slices.Contains(f.Start.Fault.Targets, node) {
			return f.End
		}
	}
	return -1
}

// rejoinBound is how long a server restarted after a power loss may take
// to apply a new entry: an election and the slack.
func rejoinBound(b core.Bounds) time.Duration { return b.Election + b.Slack }

// checkRejoinsAfterPowerLoss: a server that lost power restarts from what
// its disk kept and takes part in the cluster again: within rejoinBound of
// the heal it applies an entry it had not applied before (not a replay of
// its own log). Not judged when the run ends sooner, or when another fault
// starts within the bound (it may cut the server off again).
func checkRejoinsAfterPowerLoss(ix *traceIndex) []Violation {
	var out []Violation
	bound := rejoinBound(ix.hdr.Bounds)
	spans := ix.faultSpans()
	for _, f := range spans {
		if f.Start.Fault.Kind != core.FaultPowerLoss || f.End < 0 || ix.end < f.End+bound {
			continue
		}
		if faultStartsWithin(spans, f.End, f.End+bound) {
			continue
		}
		for _, node := range f.Start.Fault.Targets {
			ix.judge(1)
			if !ix.appliedNewWithin(node, f.End, f.End+bound) {
				out = append(out, violation(f.End, "%s did not rejoin within %v of its restart after a power loss: it applied no new entry",
					node, bound))
			}
		}
	}
	return out
}

// faultStartsWithin reports whether a fault starts in (from, to].
func faultStartsWithin(spans []faultSpan, from, to time.Duration) bool {
	for _, f := range spans {
		if f.Start.At > from && f.Start.At <= to {
			return true
		}
	}
	return false
}

// appliedNewWithin reports whether server applied an entry that is not a
// replay in [from, to].
func (ix *traceIndex) appliedNewWithin(server string, from, to time.Duration) bool {
	for _, o := range ix.Obs {
		if o.Server == server && o.At >= from && o.At <= to && !o.Obs.Replay {
			return true
		}
	}
	return false
}
