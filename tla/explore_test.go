package tla

import (
	"testing"
)

func loadExpected(t *testing.T) []expected {
	t.Helper()
	exp, err := readExpected("expected.json")
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// TestConfigsMatchTLC explores every config of expected.json and compares
// with TLC. A config TLC passes must pass here with the same distinct-state
// count. For a config TLC fails, the explorer must fail the same invariant at
// the same (shortest) depth; TLC's count at that moment, with one worker
// walking breadth first, lies after every state one level shallower and
// within the states of the violation's level.
func TestConfigsMatchTLC(t *testing.T) {
	for _, e := range loadExpected(t) {
		t.Run(e.Config, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadConfig(e.Config)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := explore(cfg, options{StopAtViolation: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d distinct states, %d transitions, levels %v", rep.Distinct, rep.Transitions, rep.Levels)
			if e.Result == "ok" {
				if rep.Violation != nil {
					t.Fatalf("TLC passes, the explorer fails: %v\ntrace:\n%s", rep.Violation, formatTrace(rep.Violation.Trace))
				}
				if rep.Distinct != e.DistinctStates {
					t.Fatalf("explorer reached %d distinct states, TLC %d", rep.Distinct, e.DistinctStates)
				}
				return
			}
			v := rep.Violation
			if v == nil {
				t.Fatalf("TLC fails %s, the explorer finds no violation in %d states", e.Invariant, rep.Distinct)
			}
			if v.Check != e.Invariant {
				t.Fatalf("explorer fails %s (%v), TLC fails %s", v.Check, v.Err, e.Invariant)
			}
			if len(v.Trace) != e.TraceStates {
				t.Fatalf("explorer's shortest trace has %d states, TLC's %d", len(v.Trace), e.TraceStates)
			}
			depth := len(v.Trace) - 1
			if len(rep.Levels) != depth+1 {
				t.Fatalf("explorer stopped after %d levels, want %d", len(rep.Levels), depth+1)
			}
			shallower := 0
			for _, n := range rep.Levels[:depth] {
				shallower += n
			}
			if e.DistinctStates <= shallower || e.DistinctStates > rep.Distinct {
				t.Fatalf("TLC stopped at %d distinct states; breadth first that must lie in (%d, %d]",
					e.DistinctStates, shallower, rep.Distinct)
			}
		})
	}
}

func formatTrace(tr []traceStep) string {
	s := ""
	for i, st := range tr {
		s += "  " + st.Action.String()
		if i == 0 {
			s += "Init"
		}
		s += "\n"
	}
	return s
}
