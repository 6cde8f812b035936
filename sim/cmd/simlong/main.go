// Command simlong runs many simulator seeds (sim's TestSeeds) in parallel
// processes, prints a progress line every few seconds and ends with a
// summary: seeds, violations by check, observations per check, seeds per
// minute and speed.
//
// Parallelism comes from processes: the sim test binary is built once and
// each worker process runs a chunk of consecutive seeds, at GOMAXPROCS=1
// (the setting under which a seed replays most often, and the cheaper one:
// a seed took 1.4 to 1.9 times the CPU at GOMAXPROCS=2, on 2 cores, 5
// servers), one seed at a time in each. Each worker writes one JSON line per
// finished seed (sim/internal/seedlog) to a pipe the tool reads; test output
// is kept only to explain a process that ended early. Every line goes to
// results.jsonl in the run's output folder (-out; by default a new folder
// under sim/testdata/simlong), with summary.txt (the summary and the
// trade-off table) and tradeoff.svg (its plot). Failing seeds keep their
// artifacts and report.html in a folder of their own under
// sim/testdata/artifacts; the tool lists them with their replay commands
// and exits 1.
//
//	go run ./sim/cmd/simlong -seeds 10000 [-first 1] [-procs 2] [-nodes 3] [-faults all] [-out DIR]
//
// Across machines, -shard K/N runs the K-th of N contiguous parts of the
// seeds (K from 0, as a Kubernetes indexed Job's JOB_COMPLETION_INDEX or
// a CI matrix index), and -merge combines the shards' results.jsonl into
// one summary, naming any seed run twice or not at all:
//
//	go run ./sim/cmd/simlong -seeds 10000 -shard 2/4 -out shard-2
//	go run ./sim/cmd/simlong -merge [-seeds 10000] [-out DIR] shard-*/results.jsonl
//
// Run it from the module root.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

func main() {
	seeds := flag.Int("seeds", 1000, "number of seeds")
	first := flag.Uint64("first", 1, "first seed")
	procs := flag.Int("procs", runtime.NumCPU(), "parallel processes")
	chunk := flag.Int("chunk", 25, "seeds per process run")
	nodes := flag.Int("nodes", 3, "servers per cluster (3 or 5)")
	faults := flag.String("faults", "all", "fault kinds (comma-separated, all, none)")
	every := flag.Duration("every", 5*time.Second, "progress line period")
	shardFlag := flag.String("shard", "", "run only part K/N of the seeds, K from 0 to N-1 (one machine's share)")
	out := flag.String("out", "", "folder for results.jsonl, summary.txt and tradeoff.svg (default: a new one under sim/testdata/simlong)")
	mergeMode := flag.Bool("merge", false, "combine the result files named as arguments into one summary, instead of running seeds")
	flag.Parse()
	if *mergeMode {
		want := expected{first: *first, seeds: *seeds}
		flag.Visit(func(f *flag.Flag) { want.ok = want.ok || f.Name == "seeds" || f.Name == "first" })
		if err := merge(os.Stdout, flag.Args(), want, *out); err != nil {
			fmt.Fprintln(os.Stderr, "simlong:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "simlong: unexpected arguments %q (result files to combine go with -merge)\n", flag.Args())
		os.Exit(2)
	}
	if *seeds < 1 || *procs < 1 || *chunk < 1 {
		fmt.Fprintln(os.Stderr, "simlong: -seeds, -procs and -chunk must be at least 1")
		os.Exit(2)
	}
	sh := whole
	if *shardFlag != "" {
		var err error
		if sh, err = parseShard(*shardFlag); err != nil {
			fmt.Fprintln(os.Stderr, "simlong:", err)
			os.Exit(2)
		}
	}
	from, n := sh.of(*first, *seeds)
	if n == 0 {
		fmt.Printf("simlong: shard %v of %d seeds has none to run\n", sh, *seeds)
		return
	}
	dir := *out
	if dir == "" {
		name := time.Now().Format("20060102-150405")
		if sh != whole {
			name += fmt.Sprintf("-shard-%d-of-%d", sh.k, sh.n)
		}
		dir = filepath.Join("sim", "testdata", "simlong", name)
	}
	if sh != whole {
		fmt.Printf("shard %v: seeds %d…%d (%d of %d)\n", sh, from, from+uint64(n)-1, n, *seeds)
	}
	if err := run(n, from, *procs, *chunk, *nodes, *faults, *every, dir); err != nil {
		fmt.Fprintln(os.Stderr, "simlong:", err)
		os.Exit(1)
	}
}

type tally struct {
	mu      sync.Mutex
	sum     *summary
	results *os.File // results.jsonl
	werr    error    // the first failed write to it
	errs    []string
}

func run(seeds int, first uint64, procs, chunk, nodes int, faults string, every time.Duration, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	results, err := os.Create(filepath.Join(out, "results.jsonl"))
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer results.Close()
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
	t := &tally{sum: newSummary(), results: results}
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
	return t.finish(time.Since(start), out)
}

// runChunk runs seeds from..from+n-1 in one process, which writes a JSON
// line per finished seed to its file descriptor 3, our pipe.
func (t *tally) runChunk(bin, dir string, from uint64, n, nodes int, faults string) {
	span := fmt.Sprintf("seeds %d..%d", from, from+uint64(n)-1)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.fail(fmt.Sprintf("%s: %v", span, err))
		return
	}
	defer pr.Close()
	cmd := exec.Command(bin, "-test.run", "^TestSeeds$", "-test.timeout", "0", "-test.count", "1",
		"-first-seed", strconv.FormatUint(from, 10), "-seeds", strconv.Itoa(n),
		"-nodes", strconv.Itoa(nodes), "-faults", faults, "-results", "/dev/fd/3")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.ExtraFiles = []*os.File{pw}
	var output tailBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err = cmd.Start()
	pw.Close() // the child holds its own copy; EOF comes when it exits
	if err != nil {
		t.fail(fmt.Sprintf("%s: %v", span, err))
		return
	}
	seen := 0
	readErr := seedlog.Read(pr, func(l seedlog.Line) {
		seen++
		t.add(l)
	})
	// A non-zero exit is expected when a seed failed; anything else that
	// stopped the chunk early (a panic, a hang's timeout) is reported.
	if err := cmd.Wait(); (err != nil || readErr != nil) && seen < n {
		t.fail(fmt.Sprintf("%s: process ended after %d seeds: %v %v\n%s", span, seen, err, readErr, output.String()))
	}
}

func (t *tally) add(l seedlog.Line) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sum.add(l)
	if err := seedlog.Write(t.results, l); err != nil && t.werr == nil {
		t.werr = err
	}
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 16<<10; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
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
	done := t.sum.done()
	rate := float64(done) / wall.Seconds()
	eta := "-"
	if rate > 0 {
		eta = time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Printf("%s  seeds %d/%d  %.2f seeds/s  %.0f virtual s per wall s  violations in %d seeds  eta %s\n",
		wall.Round(time.Second), done, total, rate, t.sum.virtual.Seconds()/wall.Seconds(), len(t.sum.failed), eta)
}

// finish prints the process errors, the failing seeds and the summary, and
// writes the summary and the trade-off plot beside results.jsonl.
func (t *tally) finish(elapsed time.Duration, out string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.errs {
		fmt.Println("ERROR", e)
	}
	var errs []error
	if t.werr != nil {
		errs = append(errs, fmt.Errorf("results: %w", t.werr))
	}
	if err := writeSummary(os.Stdout, t.sum, elapsed, out); err != nil {
		errs = append(errs, err)
	}
	if len(t.sum.failed) > 0 || len(t.errs) > 0 {
		errs = append(errs, fmt.Errorf("%d failing seeds, %d process errors", len(t.sum.failed), len(t.errs)))
	}
	return errors.Join(errs...)
}
