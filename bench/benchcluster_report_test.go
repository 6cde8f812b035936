package bench

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// benchResults collects every round's numbers per system.
type benchResults struct {
	rows     map[string]map[string][]rowResult     // system → row → one per round
	handOffs map[string]map[string][]time.Duration // system → hand-off → every sample
	// diskBefore is the disk's fsync median just before each of a
	// system's rounds: the disk drifts through a day as the CPU does.
	diskBefore map[string][]time.Duration
}

func newBenchResults() *benchResults {
	return &benchResults{rows: map[string]map[string][]rowResult{}, handOffs: map[string]map[string][]time.Duration{},
		diskBefore: map[string][]time.Duration{}}
}

func (r *benchResults) addRow(sys, row string, res rowResult) {
	if r.rows[sys] == nil {
		r.rows[sys] = map[string][]rowResult{}
	}
	r.rows[sys][row] = append(r.rows[sys][row], res)
}

func (r *benchResults) addHandOff(sys, name string, ds []time.Duration) {
	if r.handOffs[sys] == nil {
		r.handOffs[sys] = map[string][]time.Duration{}
	}
	r.handOffs[sys][name] = append(r.handOffs[sys][name], ds...)
}

// rowStats: per-round cycles/s, and the median over rounds of each round's
// p50 and p99.
func (r *benchResults) rowStats(sys, row string) (rates []float64, p50, p99 time.Duration, errs int) {
	var p50s, p99s []time.Duration
	for _, res := range r.rows[sys][row] {
		rates = append(rates, res.rate)
		p50s, p99s = append(p50s, res.p50), append(p99s, res.p99)
		errs += res.errors
	}
	return rates, median(p50s), median(p99s), errs
}

// cpuTable is the servers' CPU per cycle, row by row, median over rounds,
// with the ratio when there are two systems.
func (r *benchResults) cpuTable(names []string) string {
	cols := []string{"load", "servers' CPU per cycle " + strings.Join(names, " / ")}
	if len(names) == 2 {
		cols = append(cols, "ratio "+names[0]+"/"+names[1])
	}
	var lines [][]string
	for _, row := range benchRows {
		var meds []time.Duration
		var cells []string
		for _, n := range names {
			var ds []time.Duration
			for _, res := range r.rows[n][row.name] {
				if res.cpuPerCycle > 0 {
					ds = append(ds, res.cpuPerCycle)
				}
			}
			m := median(ds)
			if m == 0 {
				return "servers' CPU per cycle: not measured (no /proc)\n"
			}
			meds = append(meds, m)
			cells = append(cells, fmt.Sprintf("%.3f ms", m.Seconds()*1000))
		}
		line := []string{row.name, strings.Join(cells, " / ")}
		if len(meds) == 2 {
			line = append(line, fmt.Sprintf("%.2f×", meds[0].Seconds()/meds[1].Seconds()))
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	b.WriteString("\nCPU time of the three servers over each measured window, per cycle (median over rounds)\n")
	writeTable(&b, cols, lines)
	return b.String()
}

// format prints the header, the throughput table, the hand-offs and the
// fsync floor. With two systems the first is the baseline of the ratios.
func (r *benchResults) format(systems []benchSystem, header string, fsync, rtt, idleRTT time.Duration) string {
	var b strings.Builder
	b.WriteString("\n" + header + "\n")
	names := make([]string, len(systems))
	for i, s := range systems {
		names[i] = s.name
	}
	both := strings.Join(names, " / ")
	cols := []string{"load"}
	for _, n := range names {
		cols = append(cols, n+" cycles/s")
	}
	if len(names) == 2 {
		cols = append(cols, "ratio "+names[1]+"/"+names[0])
	}
	cols = append(cols, "p50 "+both, "p99 "+both)
	var lines [][]string
	errs := 0
	for _, row := range benchRows {
		line := []string{row.name}
		var meds []float64
		var p50s, p99s []string
		for _, n := range names {
			rates, p50, p99, e := r.rowStats(n, row.name)
			errs += e
			line = append(line, rateCell(rates))
			meds = append(meds, median(rates))
			p50s, p99s = append(p50s, dur(p50)), append(p99s, dur(p99))
		}
		if len(names) == 2 {
			line = append(line, ratioCell(meds[0], meds[1]))
		}
		lines = append(lines, append(line, strings.Join(p50s, " / "), strings.Join(p99s, " / ")))
	}
	writeTable(&b, cols, lines)
	if len(names) == 2 {
		var byRound []string
		for _, row := range benchRows {
			a, _, _, _ := r.rowStats(names[0], row.name)
			c, _, _, _ := r.rowStats(names[1], row.name)
			byRound = append(byRound, row.name+" "+roundRatios(a, c))
		}
		fmt.Fprintf(&b, "ratio %s/%s round by round: %s\n", names[1], names[0], strings.Join(byRound, "; "))
	}
	var costs []string
	for _, n := range names {
		var cycles, refused, reads int
		for _, res := range r.rows[n][benchRows[len(benchRows)-1].name] {
			cycles, refused, reads = cycles+res.cycles, refused+res.refused, reads+res.reads
		}
		costs = append(costs, fmt.Sprintf("%s %.2f refused acquires and %.2f reads", n,
			perCycle(refused, cycles), perCycle(reads, cycles)))
	}
	fmt.Fprintf(&b, "one contended key, per cycle: %s\n", strings.Join(costs, "; "))
	if errs > 0 {
		fmt.Fprintf(&b, "(%d requests failed and were retried; their cycles are not counted)\n", errs)
	}
	b.WriteString(r.cpuTable(names))
	b.WriteString(r.stealTable(names))
	b.WriteString(r.diskLine(names))

	b.WriteString("\nlock hand-off: from the holder letting go until the waiter on another server holds it;\n" +
		"in the chains, from one contender holding (and letting go at once) until the next one holds\n")
	hcols := []string{"hand-off"}
	for _, n := range names {
		hcols = append(hcols, n+" median / p99")
	}
	var hlines [][]string
	for _, h := range handOffs {
		line := []string{h.name}
		for _, n := range names {
			ds := r.handOffs[n][h.name]
			cell := fmt.Sprintf("%s / %s (n=%d", dur(median(ds)), dur(percentile(ds, 0.99)), len(ds))
			if slow := countAtLeast(ds, time.Second); slow > 0 {
				cell += fmt.Sprintf(", %d ≥ 1s", slow)
			}
			line = append(line, cell+")")
		}
		hlines = append(hlines, line)
	}
	writeTable(&b, hcols, hlines)

	commit := 2*fsync + rtt
	ceiling := 1 / (2 * commit.Seconds())
	fmt.Fprintf(&b, "\nfsync floor: 4 KiB O_DSYNC append, median %s (data dirs' filesystem); loopback TCP round trip, median %s\n",
		dur(fsync), dur(rtt))
	fmt.Fprintf(&b, "commit floor ≈ 2×fsync + RTT = %s (leader's log, then a follower's, then the reply)\n", dur(commit))
	fmt.Fprintf(&b, "a round trip to another process that was idle for 1ms: median %s (each hop of a lone client's request wakes one)\n", dur(idleRTT))
	var reached []string
	for _, n := range names {
		rates, _, _, _ := r.rowStats(n, benchRows[0].name)
		reached = append(reached, fmt.Sprintf("%s reached %.0f%% of it", n, 100*median(rates)/ceiling))
	}
	fmt.Fprintf(&b, "one client's ceiling = 1 / (2 × commit) = %.0f cycles/s; %s\n", ceiling, strings.Join(reached, ", "))
	fmt.Fprintf(&b, "load average %s after\n", loadAvg())
	return b.String()
}

// writeTable writes a markdown table, columns padded to their widest cell.
func writeTable(w io.Writer, cols []string, lines [][]string) {
	width := make([]int, len(cols))
	for _, l := range append([][]string{cols}, lines...) {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	row := func(l []string) {
		var cells []string
		for i, c := range l {
			cells = append(cells, c+strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	row(cols)
	var sep []string
	for _, wd := range width {
		sep = append(sep, strings.Repeat("-", wd))
	}
	row(sep)
	for _, l := range lines {
		row(l)
	}
}

// fsyncMedian is the median time of n 4 KiB appends with O_DSYNC to a new
// file in dir: what one durable log append costs on that filesystem.
func fsyncMedian(dir string, n int) (time.Duration, error) {
	name := filepath.Join(dir, "fsync-probe")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_DSYNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("open probe: %w", err)
	}
	defer os.Remove(name)
	defer f.Close()
	buf := make([]byte, 4096)
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return 0, fmt.Errorf("write probe: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	return median(ds), nil
}

// idleProcessRTT is the median of n one-byte ping-pongs over 127.0.0.1 with
// another process, each after 1ms of quiet: what a hop costs when the peer
// sleeps, as every server does between a lone client's requests. The echo
// peer is this test binary run again (TestBenchEchoPeer).
func idleProcessRTT(n int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	peer := exec.Command(os.Args[0], "-test.run=^TestBenchEchoPeer$")
	peer.Env = append(os.Environ(), "TENURE_BENCH_ECHO="+ln.Addr().String())
	if err := peer.Start(); err != nil {
		return 0, fmt.Errorf("start echo peer: %w", err)
	}
	defer func() {
		_ = peer.Process.Kill()
		_ = peer.Wait()
	}()
	c, err := ln.Accept()
	if err != nil {
		return 0, fmt.Errorf("accept echo peer: %w", err)
	}
	defer c.Close()
	return pingPong(c, n, time.Millisecond)
}

// loopbackRTT is the median of n one-byte ping-pongs over 127.0.0.1.
func loopbackRTT(n int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	return pingPong(c, n, 0)
}

// pingPong is the median of n one-byte round trips on c to an echo, each
// after a pause of idle.
func pingPong(c net.Conn, n int, idle time.Duration) (time.Duration, error) {
	buf := []byte{1}
	ds := make([]time.Duration, 0, n)
	for range n {
		if idle > 0 {
			time.Sleep(idle)
		}
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return 0, fmt.Errorf("ping: %w", err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, fmt.Errorf("pong: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	return median(ds), nil
}
