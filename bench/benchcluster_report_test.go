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
	cases    []benchCase                           // what each cluster runs, in order
	rows     map[string]map[string][]rowResult     // system → case key → one per round
	handOffs map[string]map[string][]time.Duration // system → hand-off → every sample
	// diskBefore is the disk's fsync median just before each of a
	// system's rounds: the disk drifts through a day as the CPU does.
	diskBefore map[string][]time.Duration
	// dip is the disk's pace at its slowest phase (diskDip), if probed.
	dip *dipProbe
}

// dipProbe is what diskDip measured after the rounds.
type dipProbe struct {
	writers        int
	perSecond, dip float64
}

func newBenchResults(cases []benchCase) *benchResults {
	return &benchResults{cases: cases, rows: map[string]map[string][]rowResult{},
		handOffs: map[string]map[string][]time.Duration{}, diskBefore: map[string][]time.Duration{}}
}

func (r *benchResults) addRow(sys string, c benchCase, res rowResult) {
	if r.rows[sys] == nil {
		r.rows[sys] = map[string][]rowResult{}
	}
	r.rows[sys][c.key()] = append(r.rows[sys][c.key()], res)
}

func (r *benchResults) addHandOff(sys, name string, ds []time.Duration) {
	if r.handOffs[sys] == nil {
		r.handOffs[sys] = map[string][]time.Duration{}
	}
	r.handOffs[sys][name] = append(r.handOffs[sys][name], ds...)
}

// caseStats is one system's figures for one case over its rounds: each
// round's cycles/s, and the median over rounds of each latency and of the
// fewest and most acquires per client, but the longest wait of any round.
type caseStats struct {
	rates                          []float64
	p50, p99, reqP99, waitP99      time.Duration
	longestWait                    time.Duration
	slowWaits                      int // over every round
	fewest, most                   float64
	errors, cycles, refused, reads int
}

func (r *benchResults) stats(sys string, c benchCase) caseStats {
	var s caseStats
	var p50s, p99s, reqs, waits []time.Duration
	var fewest, most []float64
	for _, res := range r.rows[sys][c.key()] {
		s.rates = append(s.rates, res.rate)
		p50s, p99s = append(p50s, res.p50), append(p99s, res.p99)
		reqs, waits = append(reqs, res.reqP99), append(waits, res.waitP99)
		fewest, most = append(fewest, float64(res.fewest)), append(most, float64(res.most))
		s.longestWait = max(s.longestWait, res.longestWait)
		s.slowWaits += res.slowWaits
		s.errors += res.errors
		s.cycles, s.refused, s.reads = s.cycles+res.cycles, s.refused+res.refused, s.reads+res.reads
	}
	s.p50, s.p99, s.reqP99, s.waitP99 = median(p50s), median(p99s), median(reqs), median(waits)
	s.fewest, s.most = median(fewest), median(most)
	return s
}

// caseName is a case as the tables name it.
func caseName(c benchCase) string { return c.row.name + ", " + c.kind.id }

// cpuTable is the servers' CPU per cycle, case by case, median over
// rounds, with the ratio when there are two systems.
func (r *benchResults) cpuTable(names []string) string {
	cols := []string{"load", "servers' CPU per cycle " + strings.Join(names, " / ")}
	if len(names) == 2 {
		cols = append(cols, "ratio "+names[0]+"/"+names[1])
	}
	var lines [][]string
	for _, c := range r.cases {
		var meds []time.Duration
		var cells []string
		for _, n := range names {
			var ds []time.Duration
			for _, res := range r.rows[n][c.key()] {
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
		line := []string{caseName(c), strings.Join(cells, " / ")}
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

// atMost says whether the second system's p99s are at or below the first's
// (the baseline's): "yes", or which of them are above.
func atMost(base, other caseStats) string {
	var over []string
	if other.p99 > base.p99 {
		over = append(over, "cycle")
	}
	if other.reqP99 > base.reqP99 {
		over = append(over, "request")
	}
	if len(over) == 0 {
		return "yes"
	}
	return "no: " + strings.Join(over, ", ")
}

// format prints the header, the throughput and latency table, fairness,
// the hand-offs and the fsync floor. With two systems the first is the
// baseline of the ratios.
func (r *benchResults) format(systems []benchSystem, header string, fsync, rtt, idleRTT time.Duration) string {
	var b strings.Builder
	b.WriteString("\n" + header + "\n")
	names := make([]string, len(systems))
	for i, s := range systems {
		names[i] = s.name
	}
	both := strings.Join(names, " / ")
	b.WriteString("cycle: from the first acquire attempt (Lock's call) until the release is answered; request: one acquire\n" +
		"attempt or one release; wait: from a cycle's start until it holds (a wait the window's end cut counts in\n" +
		"the longest); acquires per client: the fewest and the most one client made in the window (median over\n" +
		"rounds); latencies are each round's percentile, median over rounds; the longest wait is any round's, with\n" +
		"the number of waits of a second or more over every round;\n" +
		"two figures in a cell are " + both + "\n")
	cols := []string{"load", "client"}
	for _, n := range names {
		cols = append(cols, n+" cycles/s")
	}
	if len(names) == 2 {
		cols = append(cols, "ratio "+names[1]+"/"+names[0])
	}
	cols = append(cols, "cycle p50", "cycle p99", "request p99", "wait p99", "longest wait", "acquires per client")
	if len(names) == 2 {
		cols = append(cols, names[1]+" p99s ≤ "+names[0]+"'s")
	}
	var lines [][]string
	errs := 0
	for _, c := range r.cases {
		line := []string{c.row.name, c.kind.name}
		var meds []float64
		var st []caseStats
		for _, n := range names {
			s := r.stats(n, c)
			st = append(st, s)
			errs += s.errors
			line = append(line, rateCell(s.rates))
			meds = append(meds, median(s.rates))
		}
		if len(names) == 2 {
			line = append(line, ratioCell(meds[0], meds[1]))
		}
		cell := func(f func(caseStats) string) string {
			var parts []string
			for _, s := range st {
				parts = append(parts, f(s))
			}
			return strings.Join(parts, " / ")
		}
		line = append(line,
			cell(func(s caseStats) string { return dur(s.p50) }),
			cell(func(s caseStats) string { return dur(s.p99) }),
			cell(func(s caseStats) string { return dur(s.reqP99) }),
			cell(func(s caseStats) string { return dur(s.waitP99) }),
			cell(func(s caseStats) string { return longestCell(s.longestWait, s.slowWaits) }),
			cell(func(s caseStats) string { return spreadCell(s.fewest, s.most) }))
		if len(names) == 2 {
			line = append(line, atMost(st[0], st[1]))
		}
		lines = append(lines, line)
	}
	writeTable(&b, cols, lines)
	if len(names) == 2 {
		var byRound []string
		for _, c := range r.cases {
			a, d := r.stats(names[0], c), r.stats(names[1], c)
			byRound = append(byRound, caseName(c)+" "+roundRatios(a.rates, d.rates))
		}
		fmt.Fprintf(&b, "ratio %s/%s round by round: %s\n", names[1], names[0], strings.Join(byRound, "; "))
	}
	for _, c := range r.cases {
		if !c.row.contended {
			continue
		}
		var costs []string
		for _, n := range names {
			s := r.stats(n, c)
			costs = append(costs, fmt.Sprintf("%s %.2f refused acquires and %.2f reads", n,
				perCycle(s.refused, s.cycles), perCycle(s.reads, s.cycles)))
		}
		fmt.Fprintf(&b, "%s, per cycle: %s\n", caseName(c), strings.Join(costs, "; "))
	}
	if errs > 0 {
		fmt.Fprintf(&b, "(%d requests failed and were retried; their cycles are not counted)\n", errs)
	}
	b.WriteString(r.cpuTable(names))
	b.WriteString(r.stealTable(names))
	b.WriteString(r.phaseTable(names))
	b.WriteString(r.diskLine(names))

	if len(r.handOffs) > 0 {
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
	}

	commit := 2*fsync + rtt
	ceiling := 1 / (2 * commit.Seconds())
	fmt.Fprintf(&b, "\nfsync floor: 4 KiB O_DSYNC append, median %s (data dirs' filesystem); loopback TCP round trip, median %s\n",
		dur(fsync), dur(rtt))
	if r.dip != nil {
		fmt.Fprintf(&b, "disk under %d writers syncing 300 B appends: %.0f syncs/s; its slowest %v of every %v of the wall clock began %.0f%% as many as the median %v\n",
			r.dip.writers, r.dip.perSecond, diskDipBin, phasePeriod, 100*r.dip.dip, diskDipBin)
	}
	fmt.Fprintf(&b, "commit floor ≈ 2×fsync + RTT = %s (leader's log, then a follower's, then the reply)\n", dur(commit))
	fmt.Fprintf(&b, "a round trip to another process that was idle for 1ms: median %s (each hop of a lone client's request wakes one)\n", dur(idleRTT))
	for _, c := range r.cases {
		if c.row.clients != 1 {
			continue
		}
		var reached []string
		for _, n := range names {
			reached = append(reached, fmt.Sprintf("%s reached %.0f%% of it", n, 100*median(r.stats(n, c).rates)/ceiling))
		}
		fmt.Fprintf(&b, "one client's ceiling = 1 / (2 × commit) = %.0f cycles/s; %s: %s\n", ceiling, c.kind.id, strings.Join(reached, ", "))
	}
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
