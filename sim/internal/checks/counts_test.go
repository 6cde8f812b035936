package checks

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// TestCountsShowWhatWasJudged: a check reports how many observations it
// judged, so a pass over nothing is told apart from a pass over many.
func TestCountsShowWhatWasJudged(t *testing.T) {
	b := newTB()
	b.fenced(sec(1), "c1", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}, 0)
	b.fenced(sec(2), "c2", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 2, Session: "b"}, 0)
	b.fenced(sec(3), "c1", core.FenceToken, model.Sequencer{Key: "k", LockIndex: 1, Session: "a"}, 0)
	vs, n, err := RunCheckCounted(CheckFenced, b.end(sec(4)))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || len(vs) != 1 {
		t.Fatalf("fenced-resource judged %d writes with %d violations, want 3 and 1", n, len(vs))
	}

	vs, n, err = RunCheckCounted(CheckDurable, durableTrace("v1", true, false))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(vs) != 1 {
		t.Fatalf("no-lost-writes judged %d writes with %d violations, want 1 and 1", n, len(vs))
	}
	// An ambiguous last write is not judged: the count says so.
	if _, n, _ = RunCheckCounted(CheckDurable, durableTrace("v3", true, true)); n != 0 {
		t.Fatalf("no-lost-writes judged %d ambiguous writes, want 0", n)
	}
}

// TestZeroCountIsVisible: over a trace with nothing in it every check
// judges nothing, and its count says it was not exercised.
func TestZeroCountIsVisible(t *testing.T) {
	vs, counts := RunChecksCounted(newTB().end(sec(1)))
	if len(vs) != 0 {
		t.Fatalf("violations on an empty trace: %v", vs)
	}
	if len(counts) != len(ChecksFor(SeededRun)) {
		t.Fatalf("%d counts for %d checks", len(counts), len(ChecksFor(SeededRun)))
	}
	for _, c := range counts {
		if c.N != 0 || !strings.Contains(c.String(), "0 "+c.Unit+" (not exercised)") {
			t.Errorf("count on an empty trace: %q", c)
		}
	}
	c := Count{Check: CheckFenced, Unit: "accepted fenced writes", N: 12, Violations: 2}
	if got := c.String(); got != "fenced-resource 12 accepted fenced writes, 2 violations" {
		t.Fatalf("count %q", got)
	}
}
