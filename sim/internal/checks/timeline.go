package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/sim/internal/core"
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
