package bench

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The two helpers `make bench-scale` reports with: a latency summary and
// the resident set size of a process. They are kept apart from the
// benchmark so that `make test` checks them.

// latencies summarizes wake-up times: nearest-rank percentiles (the value
// at rank ceil(p·n), so p99 of 100 samples is the 99th smallest) and the
// largest. Values may be negative (a watcher answered before its writer saw
// the acknowledgement), so nothing is clamped.
type latencies struct {
	n             int
	p50, p99, max time.Duration
}

func summarize(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	return latencies{n: len(ds), p50: percentile(ds, 0.50), p99: percentile(ds, 0.99), max: slices.Max(ds)}
}

// vmRSS reads the VmRSS line of a /proc/<pid>/status text, in KiB.
func vmRSS(status string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmRSS line %q: want a number of kB", sc.Text())
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS line %q: %w", sc.Text(), err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("no VmRSS line in the status text")
}

func TestSummarizeNearestRank(t *testing.T) {
	var hundred, thousand []int
	for i := 100; i >= 1; i-- { // reversed: summarize must sort
		hundred = append(hundred, i)
	}
	for i := 1; i <= 1000; i++ {
		thousand = append(thousand, i)
	}
	for _, c := range []struct {
		name          string
		in            []time.Duration
		p50, p99, max time.Duration
	}{
		{"1..100", ms(hundred...), 50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond},
		{"1..1000", ms(thousand...), 500 * time.Millisecond, 990 * time.Millisecond, 1000 * time.Millisecond},
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"three", ms(30, 10, 20), 20 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond},
		{"negative", ms(-5, 3, -1, 2), -1 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond},
	} {
		got := summarize(c.in)
		if got.n != len(c.in) || got.p50 != c.p50 || got.p99 != c.p99 || got.max != c.max {
			t.Errorf("%s: got %+v, want n=%d p50=%v p99=%v max=%v", c.name, got, len(c.in), c.p50, c.p99, c.max)
		}
	}
	if got := summarize(nil); got != (latencies{}) {
		t.Errorf("empty: got %+v", got)
	}
	in := ms(3, 1, 2)
	summarize(in)
	if !slices.Equal(in, ms(3, 1, 2)) {
		t.Errorf("summarize reordered its input: %v", in)
	}
}

func TestVMRSS(t *testing.T) {
	status := "Name:\ttenure\nVmPeak:\t 1500000 kB\nVmHWM:\t   90000 kB\nVmRSS:\t   81234 kB\nRssAnon:\t   70000 kB\n"
	if n, err := vmRSS(status); err != nil || n != 81234 {
		t.Errorf("got %d, %v; want 81234", n, err)
	}
	for _, bad := range []string{
		"Name:\ttenure\nRssAnon:\t 70000 kB\n", // no VmRSS (a kernel thread)
		"VmRSS:\t 81234 MB\n",
		"VmRSS:\t lots kB\n",
	} {
		if n, err := vmRSS(bad); err == nil {
			t.Errorf("%q: got %d, want an error", bad, n)
		}
	}
}
