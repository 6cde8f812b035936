// Command simlong runs many simulator seeds (sim's TestSeeds) in parallel
// processes and prints a progress line every few seconds.
//
// Parallelism comes from processes: the sim test binary is built once and
// each worker process runs a chunk of consecutive seeds, at GOMAXPROCS=1
// (the setting under which a seed replays most often, and the cheaper one:
// a seed took 1.4 to 1.9 times the CPU at GOMAXPROCS=2, on 2 cores, 5
// servers), one seed at a time in each. Each worker writes one JSON line per
// finished seed (sim/internal/seedlog) to a pipe the tool reads; test output
// is kept only to explain a process that ended early. Failing seeds keep
// their artifacts in a folder of their own under sim/testdata/artifacts; the
// tool lists them with their replay commands and exits 1.
//
//	go run ./sim/cmd/simlong -seeds 10000 [-first 1] [-procs 2] [-nodes 3] [-faults all]
//
// Run it from the module root.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
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

type tally struct {
	mu      sync.Mutex
	done    int
	failed  map[uint64]seedlog.Line
	virtual time.Duration
	// seedWall is the seeds' own wall time summed (seedlog.Line.Wall):
	// virtual over it is the speed of one process, while virtual over
	// the elapsed time is all processes' together.
	seedWall time.Duration
	errs     []string
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
	t := &tally{failed: map[uint64]seedlog.Line{}}
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
	return t.report()
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
	t.done++
	t.virtual += l.Virtual
	t.seedWall += l.Wall
	if l.Violations > 0 {
		t.failed[l.Seed] = l
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
	rate := float64(t.done) / wall.Seconds()
	eta := "-"
	if rate > 0 {
		eta = (time.Duration(float64(total-t.done)/rate) * time.Second).Round(time.Second).String()
	}
	perSeed := "-"
	if t.seedWall > 0 {
		perSeed = fmt.Sprintf("%.0f×", t.virtual.Seconds()/t.seedWall.Seconds())
	}
	fmt.Printf("%s  seeds %d/%d  %.2f seeds/s  %.0f virtual s per wall s (each process %s real time)  violations in %d seeds  eta %s\n",
		wall.Round(time.Second), t.done, total, rate, t.virtual.Seconds()/wall.Seconds(), perSeed, len(t.failed), eta)
}

func (t *tally) report() error {
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
		l := t.failed[s]
		fmt.Printf("FAILED seed %d: %d violations\n", s, l.Violations)
		for _, v := range l.First {
			fmt.Printf("  %s\n", v)
		}
		fmt.Printf("  replay: GOMAXPROCS=1 %s\n  artifacts: sim/%s\n", l.Replay, l.Artifacts)
	}
	if len(failed) > 0 || len(t.errs) > 0 {
		return fmt.Errorf("%d failing seeds, %d process errors", len(failed), len(t.errs))
	}
	return nil
}
