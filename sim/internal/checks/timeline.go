package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// FaultTimeline is a run's faults as it injected them, one line: when each
// started (virtual time since the run began, in seconds), its kind, whom it
// hit and how long it lasted (nothing for one that never healed).
func FaultTimeline(events []core.Event) string {
	spans := NewIndex(events).faultSpans()
	if len(spans) == 0 {
		return "no faults"
	}
	slices.SortStableFunc(spans, func(a, b faultSpan) int { return cmp.Compare(a.Start.At, b.Start.At) })
	var parts []string
	for _, f := range spans {
		p := fmt.Sprintf("%.1fs %s", f.Start.At.Seconds(), f.Start.Fault.Kind)
		if len(f.Start.Fault.Targets) > 0 {
			p += " " + strings.Join(f.Start.Fault.Targets, ",")
		}
		if f.End >= 0 {
			p += fmt.Sprintf(" for %.1fs", (f.End - f.Start.At).Seconds())
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Timeline kinds: bars (fault, leader, tenure) span time; marks (election,
// invalidation) are instants.
const (
	SpanFault        = "fault"
	SpanLeader       = "leader"
	SpanTenure       = "tenure"
	SpanElection     = "election"
	SpanInvalidation = "invalidation"
	// SpanBelief is not in a trace: a harness process's own account of
	// what it believed (sim.Process.Begin to End), drawn beside the
	// tenures the servers granted.
	SpanBelief = "belief"
)

// Span is one item of a run's full timeline, on the lane of the node or
// client it happened to. End is -1 for a bar that never ended, and equals
// Start for a mark.
type Span struct {
	Kind       string
	Lane       string
	Start, End time.Duration
	Label      string
}

// RunTimeline is everything a reader follows a run by: faults, elections
// and leaderships, invalidations and lock tenures, lane by lane (servers
// first, then clients, then any other target), sorted by start.
type RunTimeline struct {
	Lanes []string
	Spans []Span
	End   time.Duration // the run's last event
}

// Timeline builds a run's full timeline from its trace.
func Timeline(events []core.Event) RunTimeline {
	ix := NewIndex(events)
	tl := RunTimeline{End: ix.end}
	lanes := map[string]bool{}
	lane := func(name string) string {
		if !lanes[name] {
			lanes[name] = true
			tl.Lanes = append(tl.Lanes, name)
		}
		return name
	}
	for _, s := range ix.hdr.Servers {
		lane(s)
	}
	for _, c := range ix.hdr.Clients {
		lane(c.Name)
	}
	for _, f := range ix.faultSpans() {
		label := string(f.Start.Fault.Kind)
		if f.Start.Fault.Note != "" {
			label += " (" + f.Start.Fault.Note + ")"
		}
		targets := f.Start.Fault.Targets
		if len(targets) == 0 {
			targets = []string{"cluster"} // a fault on every link, or none named
		}
		for _, t := range targets {
			tl.Spans = append(tl.Spans, Span{Kind: SpanFault, Lane: lane(t), Start: f.Start.At, End: f.End, Label: label})
		}
	}
	for _, s := range core.SortedMapKeys(ix.Leader) {
		for _, iv := range ix.Leader[s] {
			tl.Spans = append(tl.Spans,
				Span{Kind: SpanElection, Lane: lane(s), Start: iv.Start, End: iv.Start, Label: s + " elected leader"},
				Span{Kind: SpanLeader, Lane: s, Start: iv.Start, End: iv.End, Label: s + " leads"})
		}
	}
	// Sessions belong to the client that created them.
	owner := map[string]string{}
	destroyed := map[string]time.Duration{}
	for _, op := range ix.ops {
		switch {
		case op.Call.Req == core.ReqCreate && op.OK() && op.Ret.SessionID != "":
			owner[op.Ret.SessionID] = op.Client
		case op.Call.Req == core.ReqDestroy && !op.notApplied():
			if t, ok := destroyed[op.Call.ID]; !ok || op.CallAt < t {
				destroyed[op.Call.ID] = op.CallAt
			}
		}
	}
	ownerOf := func(s model.Session) string {
		if c, ok := owner[s.ID]; ok {
			return c
		}
		if s.Node != "" {
			return s.Node
		}
		return "unknown"
	}
	gone := map[string]bool{}
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for _, s := range o.Obs.GoneSess {
			if gone[s.ID] {
				continue
			}
			gone[s.ID] = true
			why := "TTL expired"
			switch {
			case destroyed[s.ID] > 0 && destroyed[s.ID] <= o.At:
				why = "destroyed by its client"
			case slices.Contains(o.Obs.GoneNodes, s.Node):
				why = "node " + s.Node + " deregistered"
			case len(s.CheckIDs()) > 0:
				why = "a check went critical"
			}
			tl.Spans = append(tl.Spans, Span{Kind: SpanInvalidation, Lane: lane(ownerOf(s)), Start: o.At, End: o.At,
				Label: fmt.Sprintf("session %.8s invalidated on %s: %s", s.ID, o.Server, why)})
		}
	}
	sessions := sessionModes(ix)
	for _, h := range ix.Holdings() {
		who := owner[h.Seq.Session]
		if who == "" {
			who = ownerOf(sessions[h.Seq.Session])
		}
		tl.Spans = append(tl.Spans, Span{Kind: SpanTenure, Lane: lane(who), Start: h.Start, End: h.End,
			Label: fmt.Sprintf("holds %s@%d (session %.8s)", h.Seq.Key, h.Seq.LockIndex, h.Seq.Session)})
	}
	slices.SortStableFunc(tl.Spans, func(a, b Span) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Lane, b.Lane), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Label, b.Label))
	})
	return tl
}

// String prints the timeline one item a line, times in seconds since the
// run began.
func (tl RunTimeline) String() string {
	var b strings.Builder
	for _, s := range tl.Spans {
		when := fmt.Sprintf("%7.1fs", s.Start.Seconds())
		switch {
		case s.End < 0:
			when += "  to the end"
		case s.End != s.Start:
			when += fmt.Sprintf("–%.1fs", s.End.Seconds())
		}
		fmt.Fprintf(&b, "%-20s %-22s %-12s %s\n", when, s.Lane, s.Kind, s.Label)
	}
	return b.String()
}
