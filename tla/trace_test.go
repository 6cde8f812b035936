package tla

import (
	"os"
	"strings"
	"testing"
)

// TestTLCTracesReplay replays each TLC counterexample through the Go model,
// state by state, and checks that the last state violates the invariant TLC
// reported and no earlier state does.
func TestTLCTracesReplay(t *testing.T) {
	n := 0
	for _, e := range loadExpected(t) {
		if e.Result != "violation" {
			continue
		}
		n++
		t.Run(e.Config, func(t *testing.T) {
			cfg, err := loadConfig(e.Config)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := loadTrace(e.Trace)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.States) != e.TraceStates {
				t.Fatalf("trace has %d states, expected.json says %d", len(tr.States), e.TraceStates)
			}
			states, err := replay(cfg, tr, options{})
			if err != nil {
				t.Fatal(err)
			}
			inv := invariants[e.Invariant]
			for i, a := range states[:len(states)-1] {
				if err := inv(a, uint64(cfg.MaxIndex)); err != nil {
					t.Fatalf("state %d already violates %s: %v", i+1, e.Invariant, err)
				}
			}
			err = inv(states[len(states)-1], uint64(cfg.MaxIndex))
			if err == nil {
				t.Fatalf("replayed trace ends in a state that satisfies %s", e.Invariant)
			}
			t.Logf("%s after %v: %v", e.Invariant, tr.Actions, err)
		})
	}
	if n == 0 {
		t.Fatal("expected.json lists no failing config")
	}
}

// TestReplayDetectsDivergence: a trace whose states or actions the Go model
// does not reproduce is rejected.
func TestReplayDetectsDivergence(t *testing.T) {
	data, err := os.ReadFile("traces/MCSessions_unfenced.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig("MCSessions_unfenced.cfg")
	if err != nil {
		t.Fatal(err)
	}
	orig := string(data)
	cases := map[string]struct {
		old, new, want string
	}{
		// The trace acquires with LockIndex 1; claim 2 in the last state.
		"state differs":  {`"issued":{"k":1}`, `"issued":{"k":2}`, "variable issued"},
		"unknown action": {`"name":"DestroySession"`, `"name":"DropSession"`, "no Go counterpart"},
		"unknown value":  {`"context":{"s":"s1"}`, `"context":{"s":"s9"}`, "not in Sessions"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(orig, tc.old) {
				t.Fatalf("trace lacks %q", tc.old)
			}
			tr, err := parseTrace([]byte(strings.ReplaceAll(orig, tc.old, tc.new)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = replay(cfg, tr, options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("replay = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseTraceRejectsMalformed(t *testing.T) {
	for name, text := range map[string]string{
		"not json":        `{`,
		"no states":       `{"counterexample":{"state":[],"action":[]}}`,
		"action count":    `{"counterexample":{"state":[[1,{}],[2,{}]],"action":[]}}`,
		"misnumbered":     `{"counterexample":{"state":[[2,{}]],"action":[]}}`,
		"bad link":        `{"counterexample":{"state":[[1,{}],[2,{}]],"action":[[[2,{}],{"name":"Tick"},[1,{}]]]}}`,
		"nameless action": `{"counterexample":{"state":[[1,{}],[2,{}]],"action":[[[1,{}],{},[2,{}]]]}}`,
	} {
		if _, err := parseTrace([]byte(text)); err == nil {
			t.Errorf("%s: parseTrace accepted %s", name, text)
		}
	}
}
