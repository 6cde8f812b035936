//go:debug randseednop=0

package sim

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/report"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// Flags: `go test ./sim -seed 42` runs one seed; -seeds N a batch.
var (
	flagSeed     = flag.Uint64("seed", 0, "run only this seed (0: the default batch)")
	flagSeeds    = flag.Int("seeds", 0, "number of seeds for TestSeeds (0: the default batch)")
	flagFirst    = flag.Uint64("first-seed", 1, "first seed of the batch")
	flagNodes    = flag.Int("nodes", 3, "servers per cluster (3 or 5)")
	flagDuration = flag.Duration("duration", 60*time.Second, "virtual length of the workload-and-faults phase")
	flagFaults   = flag.String("faults", "all", "comma-separated fault kinds, or all / none")
	flagArtifact = flag.String("artifacts-dir", "", "artifacts folder for failures (default: testdata/artifacts under the package; not -artifacts, which go test itself takes since Go 1.25)")
	flagReplays  = flag.Int("replays", 3, "runs of one seed for TestReplay")
	flagLinTime  = flag.Duration("lin-timeout", 20*time.Second, "time budget of one linearizability check")
	flagResults  = flag.String("results", "", "append one JSON line per seed of TestSeeds to this file (sim/internal/seedlog)")
	flagTradeSVG = flag.String("tradeoff-svg", "", "write TestSeeds' trade-off table to this file as an SVG plot as well")
	flagProcs    = flag.Int("procs", 1, "GOMAXPROCS while TestSeeds runs (1: a seed replays exactly; 0: leave Go's default)")
	flagACL      = flag.Bool("acl", false, "run with ACLs on: default deny, a least-privilege token per client (workload.Config.ACL)")
	flagBreak    = flag.String("break", "", "run TestSeeds on one of TestTeeth's deliberately broken servers, to see what a failure looks like (-break list names them)")
)

// runSeed runs cfg inside a fresh bubble, with raft's global math/rand
// seeded from cfg.Seed, and returns the result.
func runSeed(t *testing.T, cfg workload.Config) *workload.Result {
	t.Helper()
	var res *workload.Result
	var err error
	synctest.Test(t, func(t *testing.T) {
		//lint:ignore SA1019 raft, memberlist and serf no longer draw from the global source (third_party/); seeding it keeps any draw still made there repeatable.
		rand.Seed(int64(cfg.Seed))
		res, err = workload.Run(cfg)
	})
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	return res
}

func configFromFlags(t *testing.T, seed uint64) workload.Config {
	t.Helper()
	kinds, err := core.ParseFaultKinds(*flagFaults)
	if err != nil {
		t.Fatal(err)
	}
	cfg := workload.DefaultConfig(seed)
	cfg.Servers, cfg.Duration, cfg.Faults, cfg.ACL = *flagNodes, *flagDuration, kinds, *flagACL
	if *flagBreak != "" {
		v, err := brokenServer(*flagBreak)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Variant = v
		// A broken ACL server breaks nothing without ACLs.
		cfg.ACL = cfg.ACL || v.ACL != nil
	}
	return cfg
}

func artifactRoot() string {
	if *flagArtifact != "" {
		return *flagArtifact
	}
	return filepath.Join("testdata", "artifacts")
}

// artifactDir is where a failing run's artifacts go: a folder per run, named by
// its seed, trace digest and broken server, so that no other run overwrites
// it.
func artifactDir(res *workload.Result) string {
	name := fmt.Sprintf("seed-%d-%.8s", res.Config.Seed, res.Digest)
	if res.Config.Variant != nil {
		name += "-" + res.Config.Variant.Name
	}
	return filepath.Join(artifactRoot(), name)
}

// replayCommand is the one line that reruns a seed.
func replayCommand(cfg workload.Config) string {
	var kinds []string
	for _, k := range cfg.Faults {
		kinds = append(kinds, string(k))
	}
	f := strings.Join(kinds, ",")
	switch {
	case f == "":
		f = "none"
	case slices.Equal(cfg.Faults, core.AllFaultKinds):
		f = "all"
	}
	cmd := fmt.Sprintf("go test ./sim -run 'TestSeeds$' -seed %d -nodes %d -duration %v -faults %s", cfg.Seed, cfg.Servers, cfg.Duration, f)
	if cfg.Variant != nil {
		cmd += " -break " + cfg.Variant.Name
	}
	if cfg.ACL {
		cmd += " -acl"
	}
	return cmd
}

// checkResult runs every check; on failure it writes artifacts and reports
// the seed and the replay command.
func checkResult(t *testing.T, res *workload.Result) checks.Evaluation {
	t.Helper()
	out := checks.Evaluate(res, *flagLinTime)
	if len(out.Violations) == 0 {
		return out
	}
	dir := artifactDir(res)
	page, err := report.Write(dir, res, out, replayCommand(res.Config))
	if err != nil {
		t.Errorf("write artifacts: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d violations\n", res.Config.Seed, len(out.Violations))
	for i, v := range out.Violations {
		if i == 10 {
			fmt.Fprintf(&b, "  … %d more in %s\n", len(out.Violations)-10, dir)
			break
		}
		fmt.Fprintf(&b, "  %v\n", v)
	}
	fmt.Fprintf(&b, "replay: %s\nartifacts: %s\nreport: %s", replayCommand(res.Config), dir, page)
	t.Error(b.String())
	return out
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}

// brokenServer is TestTeeth's broken server named name; "list", or a name
// it does not know, is an error that lists them with the check that
// catches each.
func brokenServer(name string) (*core.Variant, error) {
	var known []string
	for _, tc := range teethCases() {
		if tc.v.Name == name {
			return tc.v, nil
		}
		known = append(known, fmt.Sprintf("  %-40s caught by %s", tc.v.Name, tc.expect))
	}
	why := fmt.Sprintf("unknown broken server %q", name)
	if name == "list" {
		why = "broken servers"
	}
	return nil, fmt.Errorf("-break: %s (each caught by the check named, on the schedule TestTeeth gives it; -break runs it on the seed's own schedule):\n%s",
		why, strings.Join(known, "\n"))
}

// TestBrokenServerNames: -break finds every broken server TestTeeth keeps
// by its name, and refuses one it does not know with the list.
func TestBrokenServerNames(t *testing.T) {
	for _, tc := range teethCases() {
		if v, err := brokenServer(tc.v.Name); err != nil || v != tc.v {
			t.Errorf("-break %s: %v, %v", tc.v.Name, v, err)
		}
	}
	_, err := brokenServer("no-such-server")
	if err == nil || !strings.Contains(err.Error(), "lock-index-not-bumped") {
		t.Fatalf("-break of an unknown name: %v, want an error listing the known ones", err)
	}
}

// reportMarks checks that the report at path lists a violation of check
// and marks it on the lanes (report's template: the list item's id, and a
// mark named after it).
func reportMarks(path, check string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	m := regexp.MustCompile(`id="(v\d+)" data-check="` + regexp.QuoteMeta(check) + `"`).FindSubmatch(b)
	if m == nil {
		return fmt.Errorf("report %s lists no violation of %s", path, check)
	}
	if !strings.Contains(string(b), `id="mark-`+string(m[1])+`"`) {
		return fmt.Errorf("report %s lists violation %s of %s but marks it on no lane", path, m[1], check)
	}
	return nil
}
