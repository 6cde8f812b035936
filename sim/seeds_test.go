package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/workload"

	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

// TestSeeds runs one seed (-seed N) or a batch (-seeds N, default a small
// batch that fits in `make test`), checks every property on each run, and
// prints the trade-off table.
func TestSeeds(t *testing.T) {
	if *flagProcs > 0 {
		// At one P a seed replays, digest and all (doc.go, Determinism),
		// and runs faster; at more, goroutines race and reruns differ.
		prev := runtime.GOMAXPROCS(*flagProcs)
		defer runtime.GOMAXPROCS(prev)
	}
	seeds := []uint64{*flagSeed}
	if *flagSeed == 0 {
		n := *flagSeeds
		if n == 0 {
			// ≈9 s of wall time on 2 cores: each run has 12 client agents
			// in its gossip pool (more seeds: -seeds, or sim/cmd/simlong).
			n = 10
		}
		seeds = nil
		for i := range n {
			seeds = append(seeds, *flagFirst+uint64(i))
		}
	}
	results := io.Discard
	if *flagResults != "" {
		f, err := os.OpenFile(*flagResults, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatalf("results: %v", err)
		}
		defer f.Close()
		results = f
	}
	table := checks.NewTradeoff()
	batchStart := time.Now()
	var virtual time.Duration
	configOf := func(seed uint64) workload.Config { return configFromFlags(t, seed) }
	if *flagScenario != "" {
		cfg, sc, err := readScenario(*flagScenario)
		if err != nil {
			t.Fatal(err)
		}
		seeds, configOf = []uint64{sc.Seed}, func(uint64) workload.Config { return cfg }
		t.Logf("scenario %s: seed %d, %d of the seed's %d faults, failed %s when written", *flagScenario, sc.Seed, len(sc.Schedule), sc.From, sc.Check)
	}
	for _, seed := range seeds {
		start := time.Now()
		res := runSeed(t, configOf(seed))
		ev := checkResult(t, res)
		if *flagShrink && len(ev.Violations) > 0 {
			shrinkFailure(t, res, ev.Violations[0].Check)
		}
		one := checks.NewTradeoff()
		one.Add(res.Events)
		wall := time.Since(start)
		line := seedLine(res, ev, wall)
		line.Tradeoff = one.Cells()
		table.AddCells(line.Tradeoff, 1)
		if err := seedlog.Write(results, line); err != nil {
			t.Fatal(err)
		}
		virtual += res.Virtual
		t.Logf("seed %d: %d events, virtual %v, wall %v (%s), digest %s, %d violations, lin %s (%d ops, %d late lock-delay refusals excused)",
			seed, len(res.Events), res.Virtual.Round(time.Second), wall.Round(time.Millisecond), speedup(res.Virtual, wall),
			res.Digest, len(ev.Violations), ev.Lin.Verdict, ev.Lin.Ops, ev.Excused)
		t.Logf("seed %d faults: %s", seed, checks.FaultTimeline(res.Events))
		t.Logf("seed %d checks: %s", seed, countsLine(ev.Counts))
		if testing.Verbose() {
			t.Logf("seed %d timeline:\n%s", seed, checks.Timeline(res.Events))
		}
	}
	wall := time.Since(batchStart)
	t.Logf("%d seeds: virtual %v, wall %v (%s)", len(seeds), virtual.Round(time.Second), wall.Round(time.Millisecond), speedup(virtual, wall))
	table.Print(os.Stdout)
	if *flagTradeSVG != "" {
		if err := writeTradeoffSVG(*flagTradeSVG, table); err != nil {
			t.Fatal(err)
		}
		t.Logf("trade-off plot: %s", *flagTradeSVG)
	}
}

// writeTradeoffSVG writes table's plot to path.
func writeTradeoffSVG(path string, table *checks.Tradeoff) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("trade-off plot: %w", err)
	}
	err = table.WriteSVG(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("trade-off plot: %w", cerr)
	}
	return err
}

// speedup is virtual time over wall time, the simulator's speed.
func speedup(virtual, wall time.Duration) string {
	if wall <= 0 {
		return "speed unknown"
	}
	return fmt.Sprintf("%.0f× real time", virtual.Seconds()/wall.Seconds())
}

// TestReplay runs one seed several times at GOMAXPROCS=1 and reports how
// often the whole trace replays identically. It asserts what the seed does
// fix exactly: the fault schedule, clocks and client plans (the header).
func TestReplay(t *testing.T) {
	n := *flagReplays
	seed := *flagSeed
	if seed == 0 {
		seed = 1
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	digests := map[string]int{}
	var header string
	for i := range n {
		res := runSeed(t, configFromFlags(t, seed))
		h, err := json.Marshal(res.Header)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			header = string(h)
		} else if string(h) != header {
			t.Fatalf("seed %d: run %d drew a different schedule or plan", seed, i)
		}
		digests[res.Digest]++
	}
	best := 0
	for _, c := range digests {
		best = max(best, c)
	}
	t.Logf("seed %d: %d of %d runs replayed to the most common trace (%d distinct traces)", seed, best, n, len(digests))
}

// countsLine is every check with the observations it judged, one line;
// checks that judged nothing come last, named apart, so a property the run
// never exercised is not read as a pass.
func countsLine(counts []checks.Count) string {
	var judged, idle []string
	for _, c := range counts {
		if c.N == 0 {
			idle = append(idle, c.Check)
			continue
		}
		judged = append(judged, c.String())
	}
	out := strings.Join(judged, "; ")
	if len(idle) > 0 {
		out += fmt.Sprintf("; not exercised (0 observations): %s", strings.Join(idle, ", "))
	}
	return out
}

// seedLine is one seed's structured result, for sim/cmd/simlong.
func seedLine(res *workload.Result, ev checks.Evaluation, wall time.Duration) seedlog.Line {
	l := seedlog.Line{Seed: res.Config.Seed, Events: len(res.Events), Virtual: res.Virtual, Digest: res.Digest,
		Violations: len(ev.Violations), Lin: string(ev.Lin.Verdict), Ops: ev.Lin.Ops, Excused: ev.Excused,
		Wall: wall, Judged: map[string]int{}}
	for _, c := range ev.Counts {
		l.Judged[c.Check] += c.N
	}
	for _, v := range ev.Violations {
		if l.Caught == nil {
			l.Caught = map[string]int{}
		}
		l.Caught[v.Check]++
	}
	for _, v := range ev.Violations[:min(len(ev.Violations), seedlog.MaxFirst)] {
		l.First = append(l.First, v.String())
	}
	if l.Violations > 0 {
		l.Replay, l.Artifacts = replayCommand(res.Config), artifactDir(res)
	}
	return l
}
