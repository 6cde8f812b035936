package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// atPhase is a time the given offset into a period of the wall clock.
func atPhase(period int, offset time.Duration) time.Time {
	base := time.Unix(1_800_000_000, 0) // a whole number of periods since the epoch
	return base.Add(time.Duration(period)*phasePeriod + offset)
}

// TestSlowByPhase: slow requests that all start in one 20 ms of the 100 ms
// (also across the period's end) share 1; spread evenly, 20 ms holds a
// fifth of them; fast ones never count.
func TestSlowByPhase(t *testing.T) {
	// build returns one fast request per millisecond of 50 periods and a
	// 10 ms one at each of slowAt.
	build := func(slowAt ...time.Duration) ([]time.Time, []time.Duration) {
		var starts []time.Time
		var durs []time.Duration
		for p := range 50 {
			for ms := range 100 {
				starts, durs = append(starts, atPhase(p, time.Duration(ms)*time.Millisecond)), append(durs, time.Millisecond)
			}
		}
		for i, at := range slowAt {
			starts, durs = append(starts, atPhase(i, at)), append(durs, 10*time.Millisecond)
		}
		return starts, durs
	}
	ms := time.Millisecond
	for name, tc := range map[string]struct {
		slowAt []time.Duration
		slow   int
		share  float64
	}{
		"one phase":        {[]time.Duration{42 * ms, 43 * ms, 44 * ms, 50 * ms, 55 * ms}, 5, 1},
		"across the end":   {[]time.Duration{95 * ms, 98 * ms, 99 * ms, 3 * ms, 5 * ms}, 5, 1},
		"spread evenly":    {[]time.Duration{0, 10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms, 60 * ms, 70 * ms, 80 * ms, 90 * ms}, 10, 0.2},
		"none slow":        {nil, 0, 0},
		"one in, one away": {[]time.Duration{40 * ms, 90 * ms}, 2, 0.5},
	} {
		starts, durs := build(tc.slowAt...)
		slow, share := slowByPhase(starts, durs)
		if slow != tc.slow || math.Abs(share-tc.share) > 1e-9 {
			t.Errorf("%s: %d slow, share %.2f; want %d, %.2f", name, slow, share, tc.slow, tc.share)
		}
	}
	if slow, share := slowByPhase(make([]time.Time, 2), make([]time.Duration, 3)); slow != 0 || share != 0 {
		t.Errorf("mismatched lengths: %d, %.2f; want nothing", slow, share)
	}
}

// TestDipOf: a disk that keeps its pace is near 1, one that dips in a bin
// shows the dip, and no syncs at all is 0.
func TestDipOf(t *testing.T) {
	flat := make([]int, 20)
	for i := range flat {
		flat[i] = 100
	}
	dipped := append([]int(nil), flat...)
	dipped[9] = 4
	for name, tc := range map[string]struct {
		bins []int
		want float64
	}{"flat": {flat, 1}, "dipped": {dipped, 0.04}, "none": {make([]int, 20), 0}} {
		if got := dipOf(tc.bins); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %.3f, want %.3f", name, got, tc.want)
		}
	}
}

// TestDiskDipProbe runs the probe briefly: it syncs, and its dip is a share.
func TestDiskDipProbe(t *testing.T) {
	perSecond, dip, err := diskDip(t.TempDir(), 2, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if perSecond <= 0 || dip < 0 || dip > 1 {
		t.Fatalf("%.0f syncs/s, dip %.2f; want syncs and a dip within [0, 1]", perSecond, dip)
	}
}

// TestReportPhaseTable: each round's slow requests and their share in the
// busiest window, per system, and the probe's line.
func TestReportPhaseTable(t *testing.T) {
	cases, err := pickCases("1", "spin")
	if err != nil {
		t.Fatal(err)
	}
	r := newBenchResults(cases)
	r.addRow("Consul", cases[0], rowResult{rate: 100, slowRequests: 11, slowInWindow: 0.42})
	r.addRow("tenure", cases[0], rowResult{rate: 100, slowRequests: 27, slowInWindow: 0.81})
	r.addRow("tenure", cases[0], rowResult{rate: 100})
	r.dip = &dipProbe{writers: 3, perSecond: 9000, dip: 0.04}
	got := r.format([]benchSystem{{name: "Consul"}, {name: "tenure"}}, "header", time.Millisecond, time.Millisecond, time.Millisecond)
	for _, want := range []string{
		"| 1 client, spin | 11: 42%       | 27: 81%, 0    |",
		"disk under 3 writers syncing 300 B appends: 9000 syncs/s; its slowest 5ms of every 100ms of the wall clock began 4% as many as the median 5ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
