package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The statistics behind make bench-cluster, kept apart so that they are
// checked on fixed inputs by make test; the benchmark itself asserts nothing.

// percentile is the nearest-rank p-quantile (0 < p <= 1) of ds, which it
// does not reorder: the smallest value with at least p·n values at or below
// it. Nearest rank never invents a latency no cycle had.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// median of xs, the mean of the two middle values when len(xs) is even;
// 0 for none.
func median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// countAtLeast is how many of ds are at least d: the hand-offs that took
// seconds, which a median and a p99 over a few samples can hide or blur.
func countAtLeast(ds []time.Duration, d time.Duration) int {
	n := 0
	for _, x := range ds {
		if x >= d {
			n++
		}
	}
	return n
}

// perCycle is n per cycle, 0 without cycles.
func perCycle(n, cycles int) float64 {
	if cycles == 0 {
		return 0
	}
	return float64(n) / float64(cycles)
}

// rateCell is "median (min–max)" of per-round cycles/s; one round has no range.
func rateCell(rates []float64) string {
	if len(rates) == 0 {
		return "-"
	}
	if len(rates) == 1 {
		return fmt.Sprintf("%.0f", rates[0])
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(rates), slices.Min(rates), slices.Max(rates))
}

// spreadCell is the fewest and the most acquires per client.
func spreadCell(fewest, most float64) string { return fmt.Sprintf("%.0f–%.0f", fewest, most) }

// longestCell is the longest wait and, if any, how many waits took a
// second or more.
func longestCell(longest time.Duration, slow int) string {
	if slow == 0 {
		return dur(longest)
	}
	return fmt.Sprintf("%s (%d ≥ 1s)", dur(longest), slow)
}

// ratioCell is b/a of two medians, "-" when a is missing.
func ratioCell(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", b/a)
}

// roundRatios is b/a round by round, in round order: how far the ratio of
// the medians moves between rounds. Rounds missing on either side, or with
// no cycles, are left out.
func roundRatios(a, b []float64) string {
	var out []string
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			out = append(out, fmt.Sprintf("%.2f×", b[i]/a[i]))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// dur prints a latency at a precision that suits its size.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// ms is the durations of xs milliseconds, for the tests' inputs.
func ms(xs ...int) []time.Duration {
	var ds []time.Duration
	for _, x := range xs {
		ds = append(ds, time.Duration(x)*time.Millisecond)
	}
	return ds
}

func TestBenchStats(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // reversed, so percentile has to sort
	}
	for _, c := range []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond}, // nearest rank: the 2nd of 4
		{ms(hundred...), 0.99, 99 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred...), 0.001, 1 * time.Millisecond},
		{ms(hundred...), 0.5, 50 * time.Millisecond},
	} {
		in := slices.Clone(c.in)
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.in, c.p, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("percentile reordered its input: %v", c.in)
		}
	}
	for _, c := range []struct {
		a, b []float64
		want string
	}{
		{[]float64{100, 200, 400}, []float64{189, 354, 836}, "1.89×, 1.77×, 2.09×"},
		{[]float64{100, 0, 50}, []float64{150, 90}, "1.50×"}, // a failed round, a missing one
		{nil, []float64{1}, "-"},
	} {
		if got := roundRatios(c.a, c.b); got != c.want {
			t.Errorf("roundRatios(%v, %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	if got := median(ms(10, 30)); got != 20*time.Millisecond {
		t.Errorf("median of durations = %v", got)
	}
	if got := median([]float64(nil)); got != 0 {
		t.Errorf("median of none = %v", got)
	}
	if got := countAtLeast(ms(999, 1000, 5000, 3), time.Second); got != 2 {
		t.Errorf("countAtLeast = %d, want 2", got)
	}
	if got, zero := perCycle(3, 4), perCycle(3, 0); got != 0.75 || zero != 0 {
		t.Errorf("perCycle = %v, %v; want 0.75, 0", got, zero)
	}
	for _, c := range []struct{ got, want string }{
		{rateCell([]float64{1200.4, 980, 1510.6}), "1200 (980–1511)"},
		{rateCell([]float64{321.6}), "322"},
		{rateCell(nil), "-"},
		{ratioCell(200, 500), "2.50×"},
		{longestCell(12*time.Millisecond, 0), "12.00ms"},
		{longestCell(6900*time.Millisecond, 3), "6900ms (3 ≥ 1s)"},
		{ratioCell(0, 500), "-"},
		{dur(0), "-"},
		{dur(850 * time.Microsecond), "850µs"},
		{dur(12345 * time.Microsecond), "12.35ms"},
		{dur(1500 * time.Millisecond), "1500ms"},
		{dur(15*time.Second + 149*time.Millisecond), "15.1s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
