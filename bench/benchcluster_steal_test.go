package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The report's noise lines: the CPU the hypervisor stole and the disk's
// fsync median, round by round.
//
// On a virtual machine the hypervisor may run other guests on this one's
// cores, and the time it takes from it (the `st` column of vmstat) slows
// whichever system is being measured at that moment. Rounds alternate
// systems, so a neighbour busy during one round and idle during the next
// moves the ratio. Each measured window reports its stolen share, read
// from /proc/stat, so that a reader can tell a round that measured tenure
// or Consul from one that measured the neighbours.

// cpuTicks is the machine's CPU time so far, all cores, in USER_HZ ticks:
// the part the hypervisor stole, and the total.
type cpuTicks struct{ steal, total uint64 }

// parseProcStatSteal reads the aggregate "cpu" line of /proc/stat: user,
// nice, system, idle, iowait, irq, softirq, steal, then guest and
// guest_nice, which are already counted in user and nice. A kernel that
// does not report steal (fewer than eight fields) is an error, not zero.
func parseProcStatSteal(b []byte) (cpuTicks, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "cpu" {
		return cpuTicks{}, fmt.Errorf("first line of /proc/stat is %q, want the aggregate cpu line", line)
	}
	if len(f) < 9 {
		return cpuTicks{}, fmt.Errorf("cpu line has %d counters, want at least 8 (through steal)", len(f)-1)
	}
	var t cpuTicks
	for i, s := range f[1:9] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTicks{}, fmt.Errorf("cpu counter %d is %q: %w", i+1, s, err)
		}
		t.total += n
		if i == 7 {
			t.steal = n
		}
	}
	return t, nil
}

func machineTicks() (cpuTicks, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}, fmt.Errorf("machine cpu: %w", err)
	}
	return parseProcStatSteal(b)
}

// stealShare is the share of the machine's CPU time the hypervisor took
// between two readings, or -1 when it cannot tell (no time passed, or the
// counters went back).
func stealShare(before, after cpuTicks) float64 {
	if after.total <= before.total || after.steal < before.steal {
		return -1
	}
	return float64(after.steal-before.steal) / float64(after.total-before.total)
}

// stealCell is one share as a whole percentage, "?" when unknown.
func stealCell(share float64) string {
	if share < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*share)
}

// stealTable lists each row's stolen share round by round, per system.
func (r *benchResults) stealTable(names []string) string {
	return "\nCPU stolen by the hypervisor during each measured window, round by round (vmstat's st;\n" +
		"a round with a high share measured the machine's neighbours as much as the system)\n" +
		r.roundsTable(names, func(res rowResult) string { return stealCell(res.steal) })
}

// roundsTable is a table of one cell per round, case by case, a column
// per system.
func (r *benchResults) roundsTable(names []string, cell func(rowResult) string) string {
	cols := []string{"load"}
	for _, n := range names {
		cols = append(cols, n+" rounds")
	}
	var lines [][]string
	for _, c := range r.cases {
		line := []string{caseName(c)}
		for _, n := range names {
			var cells []string
			for _, res := range r.rows[n][c.key()] {
				cells = append(cells, cell(res))
			}
			line = append(line, strings.Join(cells, ", "))
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	writeTable(&b, cols, lines)
	return b.String()
}

// diskLine lists the disk's fsync median taken before each of a system's
// rounds, in the order the rounds ran.
func (r *benchResults) diskLine(names []string) string {
	var disks []string
	for _, n := range names {
		var cells []string
		for _, d := range r.diskBefore[n] {
			cells = append(cells, dur(d))
		}
		disks = append(disks, n+" "+strings.Join(cells, ", "))
	}
	return fmt.Sprintf("fsync median just before each round (4 KiB O_DSYNC appends): %s\n", strings.Join(disks, "; "))
}

// TestParseProcStatSteal: the steal counter and the total without the
// guest counters, and lines that are not an aggregate cpu line with steal.
func TestParseProcStatSteal(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		want cpuTicks
		ok   bool
	}{
		"real":        {"cpu  100 5 50 800 10 1 2 32 7 0\ncpu0 50 2 25 400 5 0 1 16 3 0\n", cpuTicks{steal: 32, total: 1000}, true},
		"no guests":   {"cpu  100 5 50 800 10 1 2 32\n", cpuTicks{steal: 32, total: 1000}, true},
		"no steal":    {"cpu  100 5 50 800 10 1 2\n", cpuTicks{}, false},
		"per core":    {"cpu0 100 5 50 800 10 1 2 32 0 0\n", cpuTicks{}, false},
		"not numbers": {"cpu  100 5 50 x 10 1 2 32 0 0\n", cpuTicks{}, false},
		"negative":    {"cpu  100 5 50 800 10 1 2 -3 0 0\n", cpuTicks{}, false},
		"empty":       {"", cpuTicks{}, false},
	} {
		got, err := parseProcStatSteal([]byte(tc.text))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v (ok %v)", name, got, err, tc.want, tc.ok)
		}
	}
	if _, err := machineTicks(); err != nil {
		t.Errorf("this machine: %v", err)
	}
}

// TestStealShare: the share between two readings, and unknown when the
// readings cannot be compared.
func TestStealShare(t *testing.T) {
	for _, tc := range []struct {
		before, after cpuTicks
		want          float64
	}{
		{cpuTicks{10, 1000}, cpuTicks{60, 1200}, 0.25},
		{cpuTicks{10, 1000}, cpuTicks{10, 1200}, 0},
		{cpuTicks{10, 1000}, cpuTicks{10, 1000}, -1}, // no time passed
		{cpuTicks{10, 1000}, cpuTicks{5, 1200}, -1},  // steal went back
		{cpuTicks{10, 1000}, cpuTicks{20, 900}, -1},  // total went back
	} {
		if got := stealShare(tc.before, tc.after); got != tc.want {
			t.Errorf("stealShare(%+v, %+v) = %v, want %v", tc.before, tc.after, got, tc.want)
		}
	}
}

// TestStealTable: each system's rounds in order, as whole percentages, an
// unknown share as "?".
func TestStealTable(t *testing.T) {
	r := newBenchResults(allCases(t))
	for _, c := range r.cases {
		for _, s := range []float64{0.04, 0.375, -1} {
			r.addRow("Consul", c, rowResult{steal: s})
			r.addRow("tenure", c, rowResult{steal: s / 2})
		}
	}
	got := r.stealTable([]string{"Consul", "tenure"})
	if strings.Count(got, "| 4%, 38%, ? ") != len(r.cases) || strings.Count(got, "| 2%, 19%, ? ") != len(r.cases) {
		t.Errorf("stealTable = %q, want every row as 4%%, 38%%, ? and 2%%, 19%%, ?", got)
	}
}

// TestReportNamesEachRoundsNoise: the report carries the stolen shares and
// the disk's fsync median of every round, in the order the rounds ran.
func TestReportNamesEachRoundsNoise(t *testing.T) {
	r := newBenchResults(allCases(t))
	systems := []benchSystem{{name: "Consul"}, {name: "tenure"}}
	for j, s := range systems {
		for i, d := range []time.Duration{210 * time.Microsecond, 640 * time.Microsecond} {
			r.diskBefore[s.name] = append(r.diskBefore[s.name], d+time.Duration(j)*time.Microsecond)
			for _, c := range r.cases {
				r.addRow(s.name, c, rowResult{rate: 100, steal: 0.1*float64(i+1) + 0.2*float64(j)})
			}
		}
	}
	got := r.format(systems, "header", 200*time.Microsecond, 10*time.Microsecond, 100*time.Microsecond)
	for _, want := range []string{
		"fsync median just before each round (4 KiB O_DSYNC appends): Consul 210µs, 640µs; tenure 211µs, 641µs",
		"| 10%, 20%      | 30%, 40%      |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
