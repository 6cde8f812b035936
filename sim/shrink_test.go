package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

var (
	flagShrink   = flag.Bool("shrink", false, "TestSeeds: shrink a failing seed's fault schedule to a smallest one that still fails the same check, and write it as a scenario")
	flagScenario = flag.String("scenario", "", "TestSeeds: run the scenario file -shrink wrote instead of seeds")
)

// shrinkRuns is how many reruns a candidate schedule must fail, every one,
// to count as failing: a seed replays most of the time, not always.
const shrinkRuns = 2

// shrunkRun is a run that failed, reduced: its seed, cluster, broken server
// if any, the check it failed and the smallest schedule found that still
// fails it. -scenario replays it.
type shrunkRun struct {
	Seed     uint64        `json:"seed"`
	Nodes    int           `json:"nodes"`
	Duration time.Duration `json:"duration"`
	Break    string        `json:"break,omitempty"`
	Check    string        `json:"check"`
	// From is how many faults the seed's own schedule had.
	From     int          `json:"from"`
	Schedule []core.Fault `json:"schedule"`
}

// failsWith reports whether cfg fails check in every one of runs reruns.
func failsWith(t *testing.T, cfg workload.Config, check string, runs int) bool {
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

// shrinkFailure shrinks a failing seed's schedule against the first check
// it failed and writes the scenario beside the run's artifacts.
func shrinkFailure(t *testing.T, res *workload.Result, failed string) {
	t.Helper()
	cfg := res.Config
	from := res.Header.Faults
	least, tried := shrinkSchedule(t, cfg, from, failed, func(c workload.Config) bool {
		return failsWith(t, c, failed, shrinkRuns)
	})
	sc := shrunkRun{Seed: cfg.Seed, Nodes: cfg.Servers, Duration: cfg.Duration, Check: failed, From: len(from), Schedule: least}
	if cfg.Variant != nil {
		sc.Break = cfg.Variant.Name
	}
	path := filepath.Join(artifactDir(res), "scenario.json")
	if err := writeScenario(path, sc); err != nil {
		t.Errorf("shrink: %v", err)
		return
	}
	t.Logf("shrunk seed %d's schedule from %d faults to %d that still fail %s (%d candidates, each run %d times): %s\n  replay: go test ./sim -run 'TestSeeds$' -scenario %s",
		cfg.Seed, len(from), len(least), failed, tried, shrinkRuns, faultList(least), path)
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

func writeScenario(path string, sc shrunkRun) error {
	b, err := json.MarshalIndent(sc, "", " ")
	if err != nil {
		return fmt.Errorf("encode scenario: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write scenario: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write scenario: %w", err)
	}
	return nil
}

// readScenario reads a scenario file into the run it describes.
func readScenario(path string) (workload.Config, shrunkRun, error) {
	var sc shrunkRun
	b, err := os.ReadFile(path)
	if err != nil {
		return workload.Config{}, sc, fmt.Errorf("scenario: %w", err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return workload.Config{}, sc, fmt.Errorf("scenario %s: %w", path, err)
	}
	cfg := workload.DefaultConfig(sc.Seed)
	cfg.Servers, cfg.Duration, cfg.Faults = sc.Nodes, sc.Duration, core.AllFaultKinds
	cfg.Schedule = append([]core.Fault{}, sc.Schedule...)
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
	if err := writeScenario(path, sc); err != nil {
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
