package checks

import (
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// TestFaultTimeline: each fault as it started, whom it hit and for how
// long; one that never ended has no length.
func TestFaultTimeline(t *testing.T) {
	mark := func(at time.Duration, id int, kind core.FaultKind, phase string, targets ...string) core.Event {
		return core.Event{At: at, Kind: core.KindFault, Fault: &core.FaultMark{ID: id, Kind: kind, Phase: phase, Targets: targets}}
	}
	events := []core.Event{
		mark(12900*time.Millisecond, 1, core.FaultPowerLoss, "start", "n2", "n3"),
		mark(23*time.Second, 1, core.FaultPowerLoss, "end"),
		mark(30*time.Second, 2, core.FaultClientCrash, "start", "agent1"),
	}
	want := "12.9s power-loss n2,n3 for 10.1s; 30.0s client-crash agent1"
	if got := FaultTimeline(events); got != want {
		t.Fatalf("timeline %q, want %q", got, want)
	}
	if got := FaultTimeline(nil); got != "no faults" {
		t.Fatalf("no faults: %q", got)
	}
}
