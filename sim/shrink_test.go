package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

var (
	flagShrink   = flag.Bool("shrink", false, "TestSeeds: shrink a failing seed's fault schedule to a smallest one that still fails the same check, and write it as a scenario")
	flagScenario = flag.String("scenario", "", "TestSeeds: run the scenario file -shrink wrote instead of seeds (a path, or the name of one kept in testdata/sim)")
)

// scenarioDir holds the shrunk scenarios kept as regression cases: each
// replays by name (-scenario NAME) and TestKeptScenarios reruns them all.
const scenarioDir = "testdata/sim"

// shrinkRuns is how many reruns a candidate schedule must fail, every one,
// to count as failing: a seed replays most of the time, not always.
const shrinkRuns = 2

// shrunkRun is a run that failed, reduced: its seed, cluster, broken server
// if any, the check it failed, the smallest schedule found that still
// fails it and the clients left (the lock groups and clients per group).
// -scenario replays it.
type shrunkRun struct {
	Seed     uint64        `json:"seed"`
	Nodes    int           `json:"nodes"`
	Duration time.Duration `json:"duration"`
	Break    string        `json:"break,omitempty"`
	Check    string        `json:"check"`
	// From is how many faults the seed's own schedule had, FromClients
	// how many clients the run had.
	From        int          `json:"from"`
	FromClients int          `json:"from_clients,omitempty"`
	Schedule    []core.Fault `json:"schedule"`
	// Faults are the run's fault kinds: with a schedule given they inject
	// nothing more, but they decide whether clocks start skewed.
	Faults          []core.FaultKind     `json:"faults,omitempty"`
	Groups          []workload.LockGroup `json:"groups,omitempty"`
	ClientsPerGroup int                  `json:"clients_per_group,omitempty"`
	MaxTTL          time.Duration        `json:"max_ttl,omitempty"`
	// ACL: the run had ACLs on (workload.Config.ACL).
	ACL bool `json:"acl,omitempty"`
}

// failsWith reports whether cfg fails check in every one of runs reruns,
// run at GOMAXPROCS=1 (onOneProc), where a seed replays.
func failsWith(t *testing.T, cfg workload.Config, check string, runs int) (fails bool) {
	t.Helper()
	onOneProc(func() { fails = failsEvery(t, cfg, check, runs) })
	return fails
}

func failsEvery(t *testing.T, cfg workload.Config, check string, runs int) bool {
	t.Helper()
	for range runs {
		res := runSeed(t, cfg)
		var caught []string
		if check == checks.CheckLinearizable {
			caught = checks.Evaluate(res, *flagLinTime).Caught()
		} else {
			caught = checks.Evaluation{Violations: checks.RunChecks(res.Events)}.Caught()
		}
		if !slices.Contains(caught, check) {
			return false
		}
	}
	return true
}

// shrinkSchedule is delta debugging (Zeller's ddmin) over the faults of a
// schedule that fails: the smallest subset found (each fault kept whole,
// with its seed-drawn time, length and target) that still fails check in
// every rerun, and how many candidates it ran.
func shrinkSchedule(t *testing.T, cfg workload.Config, schedule []core.Fault, check string, fails func(workload.Config) bool) ([]core.Fault, int) {
	t.Helper()
	return ddmin(schedule, func(s []core.Fault) bool {
		c := cfg
		c.Schedule = append([]core.Fault{}, s...)
		return fails(c)
	})
}

// shrinkClients is delta debugging over a failing run's clients: first
// over its lock groups (each group's clients keep their own seeded plans,
// core's per-name streams, so dropping one group leaves the others' steps
// as they were), then down to one client per group. It returns the
// smallest config found that still fails, and how many candidates it ran.
func shrinkClients(cfg workload.Config, groups []workload.LockGroup, fails func(workload.Config) bool) (workload.Config, int) {
	least, tried := ddmin(groups, func(gs []workload.LockGroup) bool {
		c := cfg
		c.Groups = gs
		return fails(c)
	})
	cfg.Groups = least
	for n := 1; n < cfg.ClientsPerGroup; n++ {
		c := cfg
		c.ClientsPerGroup = n
		tried++
		if fails(c) {
			cfg = c
			break
		}
	}
	return cfg, tried
}

// shrunk is one failure reduced: the scenario and how many candidates it
// took.
type shrunk struct {
	sc    shrunkRun
	tried int
}

// shrinkRun shrinks a failing run against the check it failed: its fault
// schedule first, then its clients, each candidate run shrinkRuns times.
func shrinkRun(t *testing.T, res *workload.Result, failed string) shrunk {
	t.Helper()
	cfg := res.Config
	fails := func(c workload.Config) bool { return failsWith(t, c, failed, shrinkRuns) }
	from := res.Header.Faults
	least, tried := shrinkSchedule(t, cfg, from, failed, fails)
	cfg.Schedule = least
	groups := cfg.Groups
	if groups == nil {
		groups = workload.NewLockGroups(cfg.Seed, cfg.MaxTTL)
	}
	fromClients := len(res.Header.Clients)
	cfg, more := shrinkClients(cfg, groups, fails)
	sc := shrunkRun{Seed: cfg.Seed, Nodes: cfg.Servers, Duration: cfg.Duration, Check: failed, From: len(from), FromClients: fromClients,
		Schedule: least, Faults: cfg.Faults, Groups: cfg.Groups, ClientsPerGroup: cfg.ClientsPerGroup, MaxTTL: cfg.MaxTTL, ACL: cfg.ACL}
	if cfg.Variant != nil {
		sc.Break = cfg.Variant.Name
	}
	return shrunk{sc: sc, tried: tried + more}
}

// clients is how many clients the scenario runs.
func (sc shrunkRun) clients() int { return len(sc.Groups) * sc.ClientsPerGroup }

// shrinkFailure shrinks a failing seed against the first check it failed
// and writes the scenario beside the run's artifacts.
func shrinkFailure(t *testing.T, res *workload.Result, failed string) {
	t.Helper()
	s := shrinkRun(t, res, failed)
	path := filepath.Join(artifactDir(res), "scenario.json")
	if err := writeScenarioFile(path, s.sc); err != nil {
		t.Errorf("shrink: %v", err)
		return
	}
	t.Logf("shrunk seed %d from %d faults and %d clients to %d faults and %d clients that still fail %s (%d candidates, each run %d times): %s\n  replay: go test ./sim -run 'TestSeeds$' -scenario %s",
		s.sc.Seed, s.sc.From, s.sc.FromClients, len(s.sc.Schedule), s.sc.clients(), failed, s.tried, shrinkRuns, faultList(s.sc.Schedule), path)
}

func faultList(fs []core.Fault) string {
	if len(fs) == 0 {
		return "no faults"
	}
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%s at %v for %v", f.Kind, f.At.Round(time.Millisecond), f.Dur.Round(time.Millisecond))
	}
	return s
}

// readScenario reads a scenario file into the run it describes; a name
// without a path is one of those kept in scenarioDir.
func readScenario(path string) (workload.Config, shrunkRun, error) {
	var sc shrunkRun
	if !strings.ContainsAny(path, `/\`) && filepath.Ext(path) == "" {
		path = filepath.Join(scenarioDir, path+".json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return workload.Config{}, sc, fmt.Errorf("scenario: %w", err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return workload.Config{}, sc, fmt.Errorf("scenario %s: %w", path, err)
	}
	cfg := workload.DefaultConfig(sc.Seed)
	cfg.Servers, cfg.Duration = sc.Nodes, sc.Duration
	cfg.Schedule = append([]core.Fault{}, sc.Schedule...)
	if sc.Faults != nil {
		cfg.Faults = sc.Faults
	}
	if sc.Groups != nil {
		cfg.Groups = sc.Groups
	}
	if sc.ClientsPerGroup > 0 {
		cfg.ClientsPerGroup = sc.ClientsPerGroup
	}
	if sc.MaxTTL > 0 {
		cfg.MaxTTL = sc.MaxTTL
	}
	cfg.ACL = sc.ACL
	if sc.Break != "" {
		if cfg.Variant, err = brokenServer(sc.Break); err != nil {
			return workload.Config{}, sc, err
		}
	}
	return cfg, sc, nil
}

// TestShrinkKeepsTheFaultThatMatters: a broken failure detector is caught
// only when a holder's host dies; shrinking a schedule of four faults
// keeps the client crash alone, and the scenario it writes replays to the
// same failure.
func TestShrinkKeepsTheFaultThatMatters(t *testing.T) {
	cfg := workload.DefaultConfig(1)
	cfg.Groups, cfg.ClientsPerGroup, cfg.Duration = []workload.LockGroup{serfGroup()}, 2, 90*time.Second
	cfg.Variant = deafDetector
	schedule := []core.Fault{
		{ID: 1, Kind: core.FaultServerClockStep, At: 2 * time.Second, Dur: 3 * time.Second, Pick: 1, Param: time.Second},
		{ID: 2, Kind: core.FaultClientCrash, At: 6 * time.Second, Dur: time.Second, Pick: 0},
		{ID: 3, Kind: core.FaultSlowLink, At: 9 * time.Second, Dur: 5 * time.Second, Pick: 1, Param: 2 * time.Second},
		{ID: 4, Kind: core.FaultServerPause, At: 16 * time.Second, Dur: 2 * time.Second, Pick: 2},
	}
	fails := func(c workload.Config) bool { return failsWith(t, c, checks.CheckDeadHolder, 1) }
	cfg.Schedule = schedule
	if !fails(cfg) {
		t.Fatal("the broken detector is not caught on the whole schedule")
	}
	least, tried := shrinkSchedule(t, cfg, schedule, checks.CheckDeadHolder, fails)
	if len(least) != 1 || least[0].Kind != core.FaultClientCrash {
		t.Fatalf("shrunk to %s after %d candidates, want the client crash alone", faultList(least), tried)
	}
	path := filepath.Join(t.TempDir(), "scenario.json")
	sc := shrunkRun{Seed: 1, Nodes: cfg.Servers, Duration: cfg.Duration, Break: deafDetector.Name, Check: checks.CheckDeadHolder, From: 4, Schedule: least}
	if err := writeScenarioFile(path, sc); err != nil {
		t.Fatal(err)
	}
	back, _, err := readScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Variant != deafDetector || len(back.Schedule) != 1 || back.Schedule[0] != least[0] {
		t.Fatalf("scenario read back as %+v", back)
	}
	t.Logf("shrunk %d faults to %s in %d candidates", len(schedule), faultList(least), tried)
}

var (
	flagShrinkTeeth = flag.Bool("shrink-teeth", false, "TestShrinkTeeth: shrink every TestTeeth broken server's failure (minutes; make shrink-teeth)")
	flagShrinkKeep  = flag.String("shrink-keep", "", "TestShrinkTeeth: also write each shrunk scenario to this folder, named after its broken server (e.g. testdata/sim)")
)

// TestShrinkTeeth finds each broken server's failing seed as TestTeeth
// does, shrinks it (its faults, then its clients) and prints a table of
// sizes before and after. Behind -shrink-teeth: each shrink reruns its
// candidates twice, minutes in all.
func TestShrinkTeeth(t *testing.T) {
	if !*flagShrinkTeeth {
		t.Skip("-shrink-teeth (make shrink-teeth) runs it")
	}
	var rows []string
	for _, tc := range teethCases() {
		var res *workload.Result
		for seed := uint64(1); seed <= 3 && res == nil; seed++ {
			cfg := tc.cfg(seed)
			cfg.Variant = tc.v
			if r := runSeed(t, cfg); slices.Contains(checks.Evaluate(r, time.Second).Caught(), tc.expect) {
				res = r
			}
		}
		if res == nil {
			t.Errorf("%s: no seed of 1-3 failed %s", tc.v.Name, tc.expect)
			continue
		}
		s := shrinkRun(t, res, tc.expect)
		if len(s.sc.Schedule) > s.sc.From || s.sc.clients() > s.sc.FromClients {
			t.Errorf("%s: shrinking grew the run: %+v", tc.v.Name, s.sc)
		}
		// What shrinking kept must still fail when replayed from its file.
		path := filepath.Join(t.TempDir(), tc.v.Name+".json")
		if *flagShrinkKeep != "" {
			path = filepath.Join(*flagShrinkKeep, tc.v.Name+".json")
		}
		if err := writeScenarioFile(path, s.sc); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := readScenario(path)
		if err != nil {
			t.Fatal(err)
		}
		if !failsWith(t, cfg, tc.expect, 1) {
			t.Errorf("%s: the shrunk scenario %s does not fail %s when replayed", tc.v.Name, path, tc.expect)
		}
		row := fmt.Sprintf("%-40s %-28s seed %d  faults %2d → %d  clients %2d → %d  (%d candidates): %s",
			tc.v.Name, tc.expect, s.sc.Seed, s.sc.From, len(s.sc.Schedule), s.sc.FromClients, s.sc.clients(), s.tried, faultList(s.sc.Schedule))
		t.Log(row)
		rows = append(rows, row)
	}
	fmt.Printf("shrink teeth: %d broken servers\n%s\n", len(rows), strings.Join(rows, "\n"))
}

// TestKeptScenarios replays every scenario kept in testdata/sim: each must
// still fail the check it was shrunk against, on its broken server.
func TestKeptScenarios(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(scenarioDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no kept scenario in %s (%v): the test would check nothing", scenarioDir, err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			cfg, sc, err := readScenario(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Break == "" {
				t.Fatalf("%s names no broken server: a kept scenario is a failure to replay", path)
			}
			if !failsWith(t, cfg, sc.Check, 1) {
				t.Errorf("scenario %s no longer fails %s", path, sc.Check)
			}
		})
	}
}

// TestClientFaultWithoutClients: shrinking may leave a client fault in a
// run whose clients it dropped; the fault is marked ignored, not a panic
// (it divided by the number of clients once).
func TestClientFaultWithoutClients(t *testing.T) {
	cfg := workload.DefaultConfig(1)
	cfg.Groups, cfg.Duration = []workload.LockGroup{}, 10*time.Second
	cfg.Schedule = []core.Fault{
		{ID: 1, Kind: core.FaultClientPause, At: time.Second, Dur: time.Second},
		{ID: 2, Kind: core.FaultClientCrash, At: 3 * time.Second, Dur: time.Second, Pick: 5},
	}
	res := runSeed(t, cfg)
	ignored := 0
	for _, e := range res.Events {
		if e.Fault != nil && e.Fault.Note == "no client: ignored" {
			ignored++
		}
	}
	if ignored != 2 {
		t.Fatalf("%d client faults marked ignored, want 2", ignored)
	}
}
