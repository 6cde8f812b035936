package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// TestBenchTrace follows a lone client's acquire and release through a
// follower across a durable 3-server tenure cluster: runtime traces of the
// three servers, taken at once, are cut into operations and each leg
// timed (benchtrace_ops_test.go). It is a measurement, not a test:
//
//	make bench-trace
func TestBenchTrace(t *testing.T) {
	if os.Getenv("TENURE_BENCH_TRACE") == "" {
		t.Skip("set TENURE_BENCH_TRACE=1 (make bench-trace) to follow one client's operations across the servers")
	}
	const (
		warmUp    = 3 * time.Second
		traceSecs = 2
	)
	base := t.TempDir()
	debug := filepath.Join(base, "debug.hcl")
	if err := os.WriteFile(debug, []byte("enable_debug = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := startBenchProcs(t, base, benchSystem{name: "tenure", bin: proccluster.BuildTenure(t), args: []string{"-config-file", debug}})
	defer cl.Close()

	// The whole 1-client row talks to server 0, a follower (startBenchProcs).
	var wg sync.WaitGroup
	var row rowResult
	var rowErr error
	wg.Go(func() {
		row, rowErr = runLoadRow(cl, benchCase{benchRows[0], kindByID("kv")}, 0, warmUp, traceSecs*time.Second+2*time.Second)
	})
	time.Sleep(warmUp + 500*time.Millisecond)
	procs := []string{"F", "G", "L"} // in cl.https order: followers first, the leader last
	steps := make([][]traceStep, len(procs))
	errs := make([]error, len(procs))
	var tw sync.WaitGroup
	for i, p := range procs {
		tw.Go(func() { steps[i], errs[i] = fetchTraceSteps(cl.https[i], p, traceSecs) })
	}
	tw.Wait()
	wg.Wait()
	for _, err := range append(errs, rowErr) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ops := followOps(mergeSteps(steps...))
	if len(ops) == 0 {
		counts := map[string]int{}
		for _, s := range mergeSteps(steps...) {
			counts[s.label]++
		}
		t.Fatalf("no operation followed end to end: the traces' stacks no longer match labelStep (points seen: %v)", counts)
	}
	fmt.Print(traceReport(row, ops))
}

// fetchTraceSteps takes secs seconds of the runtime trace of the server at
// addr and labels it as proc.
func fetchTraceSteps(addr, proc string, secs int) ([]traceStep, error) {
	c := &http.Client{Timeout: time.Duration(secs+30) * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%d", addr, secs))
	if err != nil {
		return nil, fmt.Errorf("trace of %s: %w", proc, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("trace of %s: %s: %s", proc, resp.Status, b)
	}
	return readTraceSteps(resp.Body, proc)
}

// traceReport is the table of legs: median and mean over the operations
// followed.
func traceReport(row rowResult, ops [][]time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\ncommit %s; 1 client through a follower: %.0f cycles/s; %d operations followed end to end\n\n",
		commitRef(), row.rate, len(ops))
	fmt.Fprintf(&b, "| segment | median | mean |\n|---|---|---|\n")
	var whole []time.Duration
	for _, op := range ops {
		var sum time.Duration
		for _, d := range op {
			sum += d
		}
		whole = append(whole, sum)
	}
	line := func(name string, ds []time.Duration) {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		fmt.Fprintf(&b, "| %s | %.0f µs | %.0f µs |\n", name, micros(median(ds)), micros(sum/time.Duration(len(ds))))
	}
	for i, name := range traceSegments {
		var ds []time.Duration
		for _, op := range ops {
			ds = append(ds, op[i])
		}
		line(name, ds)
	}
	line("whole operation", whole)
	return b.String()
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
