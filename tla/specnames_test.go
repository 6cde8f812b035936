package tla

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readSpec(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("Sessions.tla")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestActionsMatchNext: every action of Next has a Go counterpart with the
// same parameters, and back.
func TestActionsMatchNext(t *testing.T) {
	next, err := parseNext(readSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(next) != len(actions) {
		t.Errorf("Next has %d disjuncts, Go has %d actions", len(next), len(actions))
	}
	if err := matchActions(next); err != nil {
		t.Fatal(err)
	}
}

// TestActionMatchFailsOnDrift shows the name check fails when the spec and
// the Go table drift apart, in either direction.
func TestActionMatchFailsOnDrift(t *testing.T) {
	spec := readSpec(t)
	cases := map[string]struct{ old, new, want string }{
		"action missing in Go": {
			`    \/ Tick`, "    \\/ Tick\n    \\/ \\E k \\in Keys : CompactKey(k)", "CompactKey has no Go counterpart"},
		"action missing in TLA+": {
			"    \\/ \\E k \\in Keys : DeleteKey(k)\n", "", "DeleteKey is not in Next"},
		"parameter domain differs": {
			`\E s \in Sessions : RenewSession(s)`, `\E s \in Clients : RenewSession(s)`, "RenewSession: TLA+ parameters"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(spec, tc.old) {
				t.Fatalf("spec lacks %q", tc.old)
			}
			next, err := parseNext(strings.Replace(spec, tc.old, tc.new, 1))
			if err != nil {
				t.Fatal(err)
			}
			err = matchActions(next)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("matchActions = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseNextRejectsOtherShapes(t *testing.T) {
	for name, text := range map[string]string{
		"no Next":         "Spec == Init",
		"empty Next":      "Next ==\n\nSpec == 1",
		"not a disjunct":  "Next ==\n    /\\ Tick\n",
		"arguments drift": "Next ==\n    \\/ \\E c \\in Clients, k \\in Keys : Acquire(k, c)\n",
		"bad binder":      "Next ==\n    \\/ \\E c \\in Clients \\cup Keys : Acquire(c)\n",
	} {
		if _, err := parseNext(text); err == nil {
			t.Errorf("%s: parseNext accepted %q", name, text)
		}
	}
}

// TestChecksMatchSpec: every Go invariant and property is defined in
// Sessions.tla, every one is used by some config, and every name a config
// uses has a Go counterpart (loadConfig enforces the last).
func TestChecksMatchSpec(t *testing.T) {
	if err := matchChecks(definedOperators(readSpec(t))); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	files, err := filepath.Glob("MCSessions_*.cfg")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	for _, f := range files {
		cfg, err := loadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range append(cfg.Invariants, cfg.Properties...) {
			used[n] = true
		}
	}
	for name := range invariants {
		if !used[name] {
			t.Errorf("Go invariant %s is used by no config", name)
		}
	}
	for name := range properties {
		if !used[name] {
			t.Errorf("Go property %s is used by no config", name)
		}
	}
}

func TestMatchChecksFailsOnMissingDefinition(t *testing.T) {
	spec := strings.Replace(readSpec(t), "LockDelayRespected ==", "LockDelayKept ==", 1)
	err := matchChecks(definedOperators(spec))
	if err == nil || !strings.Contains(err.Error(), "LockDelayRespected") {
		t.Fatalf("matchChecks = %v, want LockDelayRespected reported", err)
	}
}

// TestEveryConfigIsExpected keeps expected.json and the .cfg files in step.
func TestEveryConfigIsExpected(t *testing.T) {
	files, err := filepath.Glob("MCSessions_*.cfg")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range loadExpected(t) {
		listed[e.Config] = true
		if _, err := os.Stat(e.Config); err != nil {
			t.Errorf("expected.json lists %s: %v", e.Config, err)
		}
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s has no entry in expected.json", f)
		}
	}
}
