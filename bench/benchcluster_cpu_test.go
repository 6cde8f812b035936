package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// At 16 and 64 clients the two cores are what both systems run short of,
// so the servers' CPU per cycle is the steadier comparison than cycles/s,
// which moves with whatever else the machine does. It is read from
// /proc/<pid>/stat around each row's measured window.

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const userHZ = 100

// procCPU is the CPU time (user and system, every thread) the processes
// have used so far.
func procCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, fmt.Errorf("cpu of %d: %w", pid, err)
		}
		d, err := parseProcStatCPU(b)
		if err != nil {
			return 0, fmt.Errorf("cpu of %d: %w", pid, err)
		}
		total += d
	}
	return total, nil
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so fields are counted from the
// last ')'.
func parseProcStatCPU(line []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", line)
	}
	f := strings.Fields(string(line[i+1:]))
	// f[0] is field 3 (state), so utime and stime are f[11] and f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad tick count %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// TestParseProcStatCPU: utime+stime of a real line, a command name with
// spaces and parentheses, and lines that are not stat lines.
func TestParseProcStatCPU(t *testing.T) {
	tail := " S 1 2 3 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 12 0 99 1000 50"
	for name, tc := range map[string]struct {
		line string
		want time.Duration
		ok   bool
	}{
		"plain":            {"4242 (tenure)" + tail, 3800 * time.Millisecond, true},
		"odd command name": {"4242 (a b) (c))" + tail, 3800 * time.Millisecond, true},
		"no parentheses":   {"4242 tenure" + tail, 0, false},
		"too short":        {"4242 (tenure) S 1 2", 0, false},
		"not a number":     {"4242 (tenure) S 1 2 3 0 -1 4194560 100 0 0 0 x 130 0", 0, false},
		"negative":         {"4242 (tenure) S 1 2 3 0 -1 4194560 100 0 0 0 -5 130 0", 0, false},
	} {
		got, err := parseProcStatCPU([]byte(tc.line))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %v %v, want %v (ok %v)", name, got, err, tc.want, tc.ok)
		}
	}
	if _, err := procCPU([]int{os.Getpid()}); err != nil {
		t.Errorf("this process: %v", err)
	}
}

// TestCPUTable: the median over rounds per row and system, Consul's over
// tenure's as the ratio, and no figures at all when a row lacks one.
func TestCPUTable(t *testing.T) {
	r := newBenchResults(allCases(t))
	for _, c := range r.cases {
		for _, ms := range []float64{0.9, 0.8, 1.0} {
			r.addRow("Consul", c, rowResult{cpuPerCycle: time.Duration(ms * float64(time.Millisecond))})
			r.addRow("tenure", c, rowResult{cpuPerCycle: time.Duration(ms / 2 * float64(time.Millisecond))})
		}
	}
	got := r.cpuTable([]string{"Consul", "tenure"})
	if want := "| " + caseName(r.cases[0]); !strings.Contains(got, want) || strings.Count(got, "0.900 ms / 0.450 ms") != len(r.cases) ||
		strings.Count(got, "2.00×") != len(r.cases) {
		t.Errorf("cpuTable = %q, want every row at 0.900 ms / 0.450 ms, 2.00×", got)
	}
	r.rows["tenure"][r.cases[1].key()] = []rowResult{{}}
	if got := r.cpuTable([]string{"Consul", "tenure"}); !strings.Contains(got, "not measured") {
		t.Errorf("a row without CPU figures gave %q", got)
	}
}
