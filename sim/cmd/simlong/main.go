// Command simlong runs many simulator seeds (sim's TestSeeds) in parallel
// processes and prints a progress line every few seconds.
//
// raft draws its election jitter from the global math/rand, which one
// process can seed for one run at a time, so parallelism comes from
// processes: the sim test binary is built once and each worker process runs
// a chunk of consecutive seeds, at GOMAXPROCS=1 (the setting under which a
// failing seed replays most often). Failing seeds keep their artifacts in
// sim/testdata/artifacts/seed-N; the tool lists them with their replay
// commands and exits 1.
//
//	go run ./sim/cmd/simlong -seeds 10000 [-first 1] [-procs 2] [-nodes 3] [-faults all]
//
// Run it from the module root.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	seeds := flag.Int("seeds", 1000, "number of seeds")
	first := flag.Uint64("first", 1, "first seed")
	procs := flag.Int("procs", runtime.NumCPU(), "parallel processes")
	chunk := flag.Int("chunk", 25, "seeds per process run")
	nodes := flag.Int("nodes", 3, "servers per cluster (3 or 5)")
	faults := flag.String("faults", "all", "fault kinds (comma-separated, all, none)")
	every := flag.Duration("every", 5*time.Second, "progress line period")
	flag.Parse()
	if *seeds < 1 || *procs < 1 || *chunk < 1 {
		fmt.Fprintln(os.Stderr, "simlong: -seeds, -procs and -chunk must be at least 1")
		os.Exit(2)
	}
	if err := run(*seeds, *first, *procs, *chunk, *nodes, *faults, *every); err != nil {
		fmt.Fprintln(os.Stderr, "simlong:", err)
		os.Exit(1)
	}
}

// One line per finished seed, and the first line of a failing seed's report.
var (
	doneLine = regexp.MustCompile(`seed (\d+): \d+ events, virtual ([0-9hms.]+),.* (\d+) violations`)
	failLine = regexp.MustCompile(`seed (\d+): (\d+) violations$`)
)

type tally struct {
	mu      sync.Mutex
	done    int
	failed  map[uint64]string // seed → first violation line
	virtual time.Duration
	errs    []string
}

func run(seeds int, first uint64, procs, chunk, nodes int, faults string, every time.Duration) error {
	dir, err := os.MkdirTemp("", "simlong")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "sim.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./sim")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the sim test binary (run from the module root): %w", err)
	}
	simDir, err := filepath.Abs("sim")
	if err != nil {
		return err
	}

	type job struct {
		from uint64
		n    int
	}
	jobs := make(chan job)
	go func() {
		for off := 0; off < seeds; off += chunk {
			jobs <- job{first + uint64(off), min(chunk, seeds-off)}
		}
		close(jobs)
	}()
	t := &tally{failed: map[uint64]string{}}
	start := time.Now()
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				t.progress(seeds, start)
			}
		}
	}()
	var wg sync.WaitGroup
	for range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				t.runChunk(bin, simDir, j.from, j.n, nodes, faults)
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.progress(seeds, start)
	return t.report(nodes, faults)
}

func (t *tally) runChunk(bin, dir string, from uint64, n, nodes int, faults string) {
	cmd := exec.Command(bin, "-test.run", "^TestSeeds$", "-test.v", "-test.timeout", "0", "-test.count", "1",
		"-first-seed", strconv.FormatUint(from, 10), "-seeds", strconv.Itoa(n),
		"-nodes", strconv.Itoa(nodes), "-faults", faults)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.fail(fmt.Sprintf("seeds %d..%d: %v", from, from+uint64(n)-1, err))
		return
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.fail(fmt.Sprintf("seeds %d..%d: %v", from, from+uint64(n)-1, err))
		return
	}
	seen := t.scan(out)
	// A non-zero exit is expected when a seed failed; anything else that
	// stopped the chunk early (a panic, a hang's timeout) is reported.
	if err := cmd.Wait(); err != nil && seen < n {
		t.fail(fmt.Sprintf("seeds %d..%d: process ended after %d seeds: %v", from, from+uint64(n)-1, seen, err))
	}
}

// scan reads one process's output and returns how many seeds it finished.
func (t *tally) scan(r io.Reader) int {
	seen := 0
	var failing uint64 // the seed whose first violation is the next line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := failLine.FindStringSubmatch(line); m != nil {
			failing, _ = strconv.ParseUint(m[1], 10, 64)
			t.mu.Lock()
			t.failed[failing] = line
			t.mu.Unlock()
			continue
		}
		if failing != 0 {
			t.mu.Lock()
			t.failed[failing] += "\n  " + line
			t.mu.Unlock()
			failing = 0
		}
		if m := doneLine.FindStringSubmatch(line); m != nil {
			v, _ := time.ParseDuration(m[2])
			seen++
			t.mu.Lock()
			t.done++
			t.virtual += v
			t.mu.Unlock()
		}
	}
	return seen
}

func (t *tally) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, msg)
}

func (t *tally) progress(total int, start time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	wall := time.Since(start)
	rate := float64(t.done) / wall.Seconds()
	eta := "-"
	if rate > 0 {
		eta = (time.Duration(float64(total-t.done)/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Printf("%s  seeds %d/%d  %.2f seeds/s  %.0f virtual s per wall s  violations in %d seeds  eta %s\n",
		wall.Round(time.Second), t.done, total, rate, t.virtual.Seconds()/wall.Seconds(), len(t.failed), eta)
}

func (t *tally) report(nodes int, faults string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.errs {
		fmt.Println("ERROR", e)
	}
	var failed []uint64
	for s := range t.failed {
		failed = append(failed, s)
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i] < failed[j] })
	for _, s := range failed {
		fmt.Printf("FAILED %s\n  replay: GOMAXPROCS=1 go test ./sim -run 'TestSeeds$' -v -seed %d -nodes %d -faults %s\n  artifacts: sim/testdata/artifacts/seed-%d\n",
			t.failed[s], s, nodes, faults, s)
	}
	if len(failed) > 0 || len(t.errs) > 0 {
		return fmt.Errorf("%d failing seeds, %d process errors", len(failed), len(t.errs))
	}
	return nil
}
