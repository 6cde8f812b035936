package tla

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

const goodConfig = `\* comment
SPECIFICATION Spec
CONSTANTS
    Nodes <- MC_Nodes
    Services <- MC_Services
    ServiceNode <- MC_ServiceNode
    Checks <- MC_Checks
    CheckNode <- MC_CheckNode
    CheckService <- MC_CheckService
    Sessions <- Rel_Sessions
    SessionNode <- Rel_SessionNode
    SessionChecks <- Rel_SessionChecks
    SessionBehavior <- Rel_SessionBehavior
    SessionTTL <- Rel_SessionTTL
    SessionDelay <- Rel_SessionDelay
    Clients <- Rel_Clients
    ClientSession <- Rel_ClientSession
    Queries <- Rel_Queries
    QuerySession <- Rel_QuerySession
    Keys <- Rel_Keys
    MaxIndex = 4
INVARIANTS
    TypeOK HolderLive
INVARIANT FencedNoStaleWrite
PROPERTY LockIndexMonotonic
CHECK_DEADLOCK FALSE
`

func TestParseConfig(t *testing.T) {
	cfg, err := parseConfig("x.cfg", goodConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Scenario != "Rel" || cfg.MaxIndex != 4 ||
		strings.Join(cfg.Invariants, ",") != "TypeOK,HolderLive,FencedNoStaleWrite" ||
		strings.Join(cfg.Properties, ",") != "LockIndexMonotonic" {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestParseConfigRejects(t *testing.T) {
	cases := map[string]struct{ old, new, want string }{
		"mixed scenarios":     {"Keys <- Rel_Keys", "Keys <- Del_Keys", "mixed"},
		"unknown scenario":    {"Rel_", "Xyz_", "not one the explorer knows"},
		"missing constant":    {"    Keys <- Rel_Keys\n", "", "Keys is not given"},
		"swapped definitions": {"Keys <- Rel_Keys", "Keys <- Rel_Clients", "substituted by a definition for Clients"},
		"catalog elsewhere":   {"Nodes <- MC_Nodes", "Nodes <- Rel_Nodes", "must come from MC_"},
		"services elsewhere":  {"CheckService <- MC_CheckService", "CheckService <- Rel_CheckService", "must come from MC_"},
		"missing queries":     {"    Queries <- Rel_Queries\n", "", "Queries is not given"},
		"bad MaxIndex":        {"MaxIndex = 4", "MaxIndex = -1", "natural number"},
		"no Go invariant":     {"TypeOK HolderLive", "TypeOK Liveness", "Liveness has no Go counterpart"},
		"no Go property":      {"PROPERTY LockIndexMonotonic", "PROPERTY Termination", "Termination has no Go counterpart"},
		"other spec":          {"SPECIFICATION Spec", "SPECIFICATION FairSpec", "SPECIFICATION Spec"},
		"deadlock checked":    {"CHECK_DEADLOCK FALSE", "CHECK_DEADLOCK TRUE", "CHECK_DEADLOCK FALSE"},
		"stray line":          {"\\* comment", "SYMMETRY Perms", "unexpected line"},
		"constant twice":      {"    MaxIndex = 4\n", "    MaxIndex = 4\n    Keys <- Rel_Keys\n", "given twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(goodConfig, tc.old) {
				t.Fatalf("config lacks %q", tc.old)
			}
			_, err := parseConfig("x.cfg", strings.ReplaceAll(goodConfig, tc.old, tc.new))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	if _, err := loadConfig("MCSessions_nonexistent.cfg"); err == nil {
		t.Fatal("loadConfig of a missing file succeeded")
	}
}

func TestScenarioValidate(t *testing.T) {
	for name, sc := range scenarios {
		if err := sc.Validate(); err != nil {
			t.Errorf("scenario %s: %v", name, err)
		}
	}
	cases := map[string]func(sc *scenario){
		"unsorted keys":       func(sc *scenario) { sc.Keys = []string{"k2", "k1"} },
		"odd TTL":             func(sc *scenario) { sc.SessionTTL = map[string]int{"s1": 3, "s2": 0} },
		"lock-delay over cap": func(sc *scenario) { sc.SessionDelay = map[string]int{"s1": 7, "s2": 0} },
		"foreign check": func(sc *scenario) {
			sc.SessionChecks = map[string][]string{"s1": {"h2"}, "s2": nil}
		},
		"bad behaviour":  func(sc *scenario) { sc.SessionBehavior = map[string]model.Behavior{"s1": "keep", "s2": "release"} },
		"unknown client": func(sc *scenario) { sc.ClientSession = map[string]string{"a": "s9", "b": "s2"} },
		"service check on another node": func(sc *scenario) {
			sc.CheckService = map[string]string{"h1": "w2"}
		},
		"query of an unknown session": func(sc *scenario) { sc.QuerySession = map[string]string{"q1": "s9"} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			sc := scenarios["Rel"]
			mutate(&sc)
			if err := sc.Validate(); err == nil {
				t.Fatalf("Validate accepted a scenario with %s", name)
			}
			if _, err := newWorld(&sc); err == nil {
				t.Fatalf("newWorld accepted a scenario with %s", name)
			}
		})
	}
}
