package checks

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

// blameGrace is how long after a fault heals a symptom is still blamed on it.
const blameGrace = 30 * time.Second

// tradeoffCell is one (session configuration × fault kind) entry of the
// trade-off table, summed over runs: the record a seed's JSON line carries.
type tradeoffCell = seedlog.TradeoffCell

// Tradeoff accumulates cells across runs; safe for concurrent use.
type Tradeoff struct {
	mu    sync.Mutex
	cells map[[2]string]*tradeoffCell
	runs  int
}

// newTradeoff returns an empty table.
func NewTradeoff() *Tradeoff { return &Tradeoff{cells: map[[2]string]*tradeoffCell{}} }

func (t *Tradeoff) cell(group, kind string) *tradeoffCell {
	k := [2]string{group, kind}
	c := t.cells[k]
	if c == nil {
		c = &tradeoffCell{Group: group, Fault: kind}
		t.cells[k] = c
	}
	return c
}

// Cells returns the table's cells, by configuration then fault kind.
func (t *Tradeoff) Cells() []seedlog.TradeoffCell {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]seedlog.TradeoffCell, 0, len(t.cells))
	for _, k := range t.sortedKeys() {
		out = append(out, *t.cells[k])
	}
	return out
}

// AddCells folds in cells another table returned (one run's, from its
// JSON line), counting them as runs more runs.
func (t *Tradeoff) AddCells(cells []seedlog.TradeoffCell, runs int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs += runs
	for _, c := range cells {
		t.cell(c.Group, c.Fault).Add(c)
	}
}

// sortedKeys lists the cells' keys by configuration, then fault kind.
func (t *Tradeoff) sortedKeys() [][2]string {
	return slices.SortedFunc(maps.Keys(t.cells), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
}

type absFault struct {
	kind       core.FaultKind
	start, end time.Duration
}

// Add folds one run's trace into the table.
func (t *Tradeoff) Add(events []core.Event) {
	ix := NewIndex(events)
	keyGroup := map[string]string{}
	for name, g := range ix.hdr.Groups {
		keyGroup[g.Key] = name
	}
	var faults []absFault
	starts := map[int]time.Duration{}
	for _, e := range ix.faults {
		if e.Fault.Phase == "start" {
			starts[e.Fault.ID] = e.At
		} else if s, ok := starts[e.Fault.ID]; ok {
			faults = append(faults, absFault{e.Fault.Kind, s, e.At})
		}
	}
	blame := func(at time.Duration) string {
		best, found := absFault{}, false
		for _, f := range faults {
			if f.start <= at && at <= f.end+blameGrace && (!found || f.start > best.start) {
				best, found = f, true
			}
		}
		if !found {
			return "none"
		}
		return string(best.kind)
	}
	holdings := ix.Holdings()
	// Successful acquires per key, by return time.
	acquires := map[string][]time.Duration{}
	for _, op := range ix.ops {
		if op.Client == core.ProberClient || !op.OK() || !lockSucceeded(op) {
			continue
		}
		for _, k := range lockKeys(op.Call) {
			acquires[k] = append(acquires[k], op.RetAt)
		}
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs++
	for _, f := range faults {
		for name, g := range ix.hdr.Groups {
			c := t.cell(name, string(f.kind))
			c.Faults++
			i := slices.IndexFunc(acquires[g.Key], func(at time.Duration) bool { return at >= f.end })
			if i < 0 || (ix.liveness >= 0 && acquires[g.Key][i] > ix.liveness) {
				c.Never++
				continue
			}
			d := acquires[g.Key][i] - f.end
			c.Recovered++
			c.RecoverySum += d
			c.RecoveryMax = max(c.RecoveryMax, d)
		}
	}
	maxSeen := map[string]uint64{}
	for _, e := range ix.writes {
		w := e.Write
		group, ok := keyGroup[w.Seq.Key]
		if !ok {
			continue
		}
		c := t.cell(group, blame(e.At))
		switch w.Resource {
		case core.ResFenced:
			if !w.Accepted {
				c.FenceRejects++
			}
		case core.ResUnfenced:
			if tn := holdings[w.Seq]; tn != nil && tn.End >= 0 && tn.End < e.At {
				c.Stale++
			}
			if w.Seq.LockIndex < maxSeen[w.Seq.Key] {
				c.Overlaps++
			}
			maxSeen[w.Seq.Key] = max(maxSeen[w.Seq.Key], w.Seq.LockIndex)
		}
	}
}

// Print writes the table: one line per (configuration, fault kind).
func (t *Tradeoff) Print(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := t.sortedKeys()
	fmt.Fprintf(w, "TRADE-OFF TABLE (%d runs): unfenced-resource safety violations and time to recover\n", t.runs)
	fmt.Fprintf(w, "%-16s %-17s %6s %6s %8s %8s %10s %10s %6s\n", "session config", "fault", "faults", "stale", "overlap", "fenced-x", "recov-avg", "recov-max", "never")
	fmt.Fprintln(w, strings.Repeat("-", 96))
	for _, k := range keys {
		c := t.cells[k]
		avg := "-"
		if c.Recovered > 0 {
			avg = (c.RecoverySum / time.Duration(c.Recovered)).Round(100 * time.Millisecond).String()
		}
		mx := "-"
		if c.Recovered > 0 {
			mx = c.RecoveryMax.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%-16s %-17s %6d %6d %8d %8d %10s %10s %6d\n", k[0], k[1], c.Faults, c.Stale, c.Overlaps, c.FenceRejects, avg, mx, c.Never)
	}
}

// GossipTradeoff is the failure-detection side of the trade-off table, per
// session configuration (serf: bound to the holder's node's serfHealth,
// ttl: renewed by the holder, none: no check): how long after a holder's
// host is killed, paused or cut off its session is invalidated, and how
// often a live holder's session is invalidated under packet loss alone.
// Safe for concurrent use.
type GossipTradeoff struct {
	mu     sync.Mutex
	detect map[[2]string]*detectCell // (fault kind, check mode)
	loss   map[string]*lossCell      // by condition, e.g. "loss 5%"
	order  []string                  // conditions in the order first added
}

type detectCell struct {
	times []time.Duration
	never int // not invalidated within the run's window
}

type lossCell struct {
	runs     int
	exposure time.Duration // agent-time under loss, summed
	// critical counts serfHealth changes to critical of live agents.
	critical int
	// sessions and lost count, per check mode, the live holders' sessions
	// and those the servers invalidated while the holder lived.
	sessions, lost map[core.CheckMode]int
}

// NewGossipTradeoff returns an empty table.
func NewGossipTradeoff() *GossipTradeoff {
	return &GossipTradeoff{detect: map[[2]string]*detectCell{}, loss: map[string]*lossCell{}}
}

// sessionModes maps each session created by a client to its group's check
// mode, and each to its node.
func sessionModes(ix *traceIndex) map[string]model.Session {
	out := map[string]model.Session{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.NewSess {
			if _, ok := out[s.ID]; !ok {
				out[s.ID] = s
			}
		}
	}
	return out
}

// modeOf is the check mode of a session, by what it is bound to.
func modeOf(s model.Session) core.CheckMode {
	switch {
	case slices.Contains(s.CheckIDs(), model.SerfHealthCheckID):
		return core.ChecksSerf
	case s.TTLDuration() > 0:
		return core.ChecksTTL
	}
	return core.ChecksNone
}

// sessionSpans says when each session was first created and first removed
// (-1: never) on any server.
func sessionSpans(ix *traceIndex) (created, gone map[string]time.Duration) {
	created, gone = map[string]time.Duration{}, map[string]time.Duration{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.NewSess {
			if t, ok := created[s.ID]; !ok || o.At < t {
				created[s.ID] = o.At
			}
		}
		for _, s := range o.Obs.GoneSess {
			if t, ok := gone[s.ID]; !ok || o.At < t {
				gone[s.ID] = o.At
			}
		}
	}
	return created, gone
}

// AddDetection folds in a run in which holders' hosts were stopped: for
// each fault start whose targets name a client agent, each session on that
// agent that existed then counts for (fault kind, its mode) with the time
// until the servers removed it, or as never if they had not by the end.
func (t *GossipTradeoff) AddDetection(events []core.Event) {
	ix := NewIndex(events)
	agents := map[string]bool{}
	for _, a := range ix.hdr.Agents {
		agents[a] = true
	}
	sessions := sessionModes(ix)
	created, gone := sessionSpans(ix)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range ix.faults {
		if e.Fault.Phase != "start" {
			continue
		}
		for _, node := range e.Fault.Targets {
			if !agents[node] {
				continue
			}
			for _, id := range core.SortedMapKeys(sessions) {
				s := sessions[id]
				if s.Node != node || created[id] > e.At {
					continue
				}
				g, ok := gone[id]
				if ok && g < e.At {
					continue // already gone
				}
				k := [2]string{string(e.Fault.Kind), string(modeOf(s))}
				c := t.detect[k]
				if c == nil {
					c = &detectCell{}
					t.detect[k] = c
				}
				if ok {
					c.times = append(c.times, g-e.At)
				} else {
					c.never++
				}
			}
		}
	}
}

// AddLoss folds in a run under one condition (named by label: uniform
// packet loss, or one slow agent) from..to with every holder alive and no
// other fault: each change of a client agent's serfHealth to critical in
// it is a false positive, and so is each session of a client the servers
// removed in it.
func (t *GossipTradeoff) AddLoss(label string, events []core.Event, from, to time.Duration) {
	ix := NewIndex(events)
	agents := map[string]bool{}
	for _, a := range ix.hdr.Agents {
		agents[a] = true
	}
	sessions := sessionModes(ix)
	created, gone := sessionSpans(ix)
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.loss[label]
	if c == nil {
		c = &lossCell{sessions: map[core.CheckMode]int{}, lost: map[core.CheckMode]int{}}
		t.loss[label] = c
		t.order = append(t.order, label)
	}
	c.runs++
	c.exposure += time.Duration(len(ix.hdr.Agents)) * (to - from)
	for _, cr := range serfCriticals(ix) {
		if agents[cr.node] && cr.at >= from && cr.at <= to {
			c.critical++
		}
	}
	for id, s := range sessions {
		if !agents[s.Node] || created[id] > from {
			continue
		}
		g, ok := gone[id]
		if ok && g < from {
			continue
		}
		m := modeOf(s)
		c.sessions[m]++
		if ok && g <= to {
			c.lost[m]++
		}
	}
}

// Print writes both halves of the gossip table.
func (t *GossipTradeoff) Print(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(w, "DETECTION: time from a holder's host stopping to its session's invalidation")
	fmt.Fprintf(w, "%-18s %-6s %6s %9s %9s %9s %9s %6s\n", "holder", "config", "n", "min", "median", "p90", "max", "never")
	fmt.Fprintln(w, strings.Repeat("-", 80))
	keys := slices.SortedFunc(maps.Keys(t.detect), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	for _, k := range keys {
		c := t.detect[k]
		ts := slices.Clone(c.times)
		slices.Sort(ts)
		q := func(p float64) string {
			if len(ts) == 0 {
				return "-"
			}
			return ts[min(len(ts)-1, int(p*float64(len(ts))))].Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%-18s %-6s %6d %9s %9s %9s %9s %6d\n", k[0], k[1], len(ts)+c.never, q(0), q(0.5), q(0.9), q(1), c.never)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "FALSE POSITIVES: every holder alive, no other fault (lost: sessions invalidated / sessions)")
	fmt.Fprintf(w, "%-16s %5s %12s %10s %12s %12s %12s\n", "condition", "runs", "agent-hours", "serf-crit", "serf lost", "ttl lost", "none lost")
	fmt.Fprintln(w, strings.Repeat("-", 86))
	for _, l := range t.order {
		c := t.loss[l]
		frac := func(m core.CheckMode) string {
			return fmt.Sprintf("%d/%d", c.lost[m], c.sessions[m])
		}
		fmt.Fprintf(w, "%-16s %5d %12.2f %10d %12s %12s %12s\n", l, c.runs, c.exposure.Hours(), c.critical,
			frac(core.ChecksSerf), frac(core.ChecksTTL), frac(core.ChecksNone))
	}
}
