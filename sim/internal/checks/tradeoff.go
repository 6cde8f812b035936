package checks

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// blameGrace is how long after a fault heals a symptom is still blamed on it.
const blameGrace = 30 * time.Second

// tradeoffCell is one (session configuration × fault kind) entry of the trade-off
// table, summed over runs.
type tradeoffCell struct {
	Faults int // occurrences of the fault kind
	// Stale counts unfenced-resource writes made after the writer's holding
	// had ended on the servers: the safety violations a fence would stop.
	Stale int
	// Overlaps counts unfenced writes whose lock index is below one the
	// resource had already seen: two holders' writes interleaved.
	Overlaps int
	// FenceRejects counts writes the fenced resource refused.
	FenceRejects int
	// Recovered/RecoverySum/RecoveryMax: time from the fault's end until the
	// group's key was next acquired; Never counts faults after which it was
	// not acquired before the run ended.
	Recovered   int
	RecoverySum time.Duration
	RecoveryMax time.Duration
	Never       int
}

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
		c = &tradeoffCell{}
		t.cells[k] = c
	}
	return c
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
	keys := make([][2]string, 0, len(t.cells))
	for k := range t.cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
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
