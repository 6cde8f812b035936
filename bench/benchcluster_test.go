package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// TestBenchCluster measures lock throughput and latency of a durable
// 3-server tenure cluster and, when TENURE_BENCH_CLUSTER_CONSUL names a
// consul binary, of a 3-server Consul laid out the same way, and prints them
// side by side. Each round starts a fresh cluster per system, alternating
// which goes first, so both share the machine's state. It is a measurement,
// run by make bench-cluster, not part of make test:
//
//	make bench-cluster CONSUL=/path/to/consul ROUNDS=3 BENCH_SECONDS=5
//
// ROWS (1,16,64,8one,64one) and CLIENTS (spin,lock,kv) pick a subset, and
// HANDOFFS=0 leaves the hand-offs out, for a short run.
func TestBenchCluster(t *testing.T) {
	if os.Getenv("TENURE_BENCH_CLUSTER") == "" {
		t.Skip("set TENURE_BENCH_CLUSTER=1 (make bench-cluster) to measure lock throughput")
	}
	rounds := envInt("TENURE_BENCH_CLUSTER_ROUNDS", 3)
	measure := time.Duration(envInt("TENURE_BENCH_CLUSTER_SECONDS", 5)) * time.Second
	const warmUp = 2 * time.Second
	cases, err := pickCases(os.Getenv("TENURE_BENCH_CLUSTER_ROWS"), os.Getenv("TENURE_BENCH_CLUSTER_CLIENTS"))
	if err != nil {
		t.Fatal(err)
	}
	withHandOffs := os.Getenv("TENURE_BENCH_CLUSTER_HANDOFFS") != "0"

	// One directory holds every data directory and the fsync probe, so the
	// floor is measured on the filesystem the servers write to.
	base := t.TempDir()
	tenure := proccluster.BuildTenure(t)
	systems := []benchSystem{{name: "tenure", bin: tenure}}
	if c := os.Getenv("TENURE_BENCH_CLUSTER_CONSUL"); c != "" {
		systems = append([]benchSystem{{name: "Consul", bin: c}}, systems...)
	}

	// The header is taken before the rounds, so that it names the tree the
	// binaries were built from even if the tree changes while they run.
	header := benchHeader(systems, rounds, measure, warmUp)
	res := newBenchResults(cases)
	for round := range rounds {
		order := slices.Clone(systems)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, sys := range order {
			disk, err := fsyncMedian(base, 500)
			if err != nil {
				t.Fatalf("fsync probe: %v", err)
			}
			res.diskBefore[sys.name] = append(res.diskBefore[sys.name], disk)
			t.Logf("round %d, %s: fsync median %v before it", round+1, sys.name, dur(disk))
			benchOneCluster(t, base, sys, round, warmUp, measure, withHandOffs, res)
		}
	}

	fsync, err := fsyncMedian(base, 2000)
	if err != nil {
		t.Fatalf("fsync probe: %v", err)
	}
	writers := 3
	perSecond, dip, err := diskDip(base, writers, 2*time.Second)
	if err != nil {
		t.Fatalf("disk dip probe: %v", err)
	}
	res.dip = &dipProbe{writers: writers, perSecond: perSecond, dip: dip}
	rtt, err := loopbackRTT(2000)
	if err != nil {
		t.Fatalf("loopback probe: %v", err)
	}
	idleRTT, err := idleProcessRTT(1000)
	if err != nil {
		t.Fatalf("idle round-trip probe: %v", err)
	}
	report := res.format(systems, header, fsync, rtt, idleRTT)
	fmt.Print(report)
	t.Log("\n" + report)
}

// TestBenchEchoPeer is the other process of idleProcessRTT, run by it with
// TENURE_BENCH_ECHO set; on its own it has nothing to do.
func TestBenchEchoPeer(t *testing.T) {
	addr := os.Getenv("TENURE_BENCH_ECHO")
	if addr == "" {
		t.Skip("the echo peer of make bench-cluster's round-trip probe")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("echo peer: %v", err)
	}
	defer c.Close()
	_, _ = io.Copy(c, c)
}

type benchSystem struct {
	name, bin string
	args      []string // more flags for every server
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// benchOneCluster starts sys's cluster, runs every case and the hand-offs
// on it and stops it.
func benchOneCluster(t *testing.T, base string, sys benchSystem, round int, warmUp, measure time.Duration, withHandOffs bool, res *benchResults) {
	t.Helper()
	cl := startBenchProcs(t, base, sys)
	defer cl.Close()
	for _, c := range res.cases {
		r, err := runLoadRow(cl, c, round, warmUp, measure)
		if err != nil {
			t.Fatalf("round %d, %s, %s, %s: %v", round+1, sys.name, c.row.name, c.kind.name, err)
		}
		res.addRow(sys.name, c, r)
		t.Logf("round %d, %s, %s, %s: %.0f cycles/s, cycle p50 %v p99 %v, request p50 %v p99 %v, wait p99 %v longest %v (%d ≥ 1s), "+
			"acquires per client %d–%d, per cycle %.2f refused acquires and %.2f reads, %d errors; load average %s, CPU stolen %s",
			round+1, sys.name, c.row.name, c.kind.name, r.rate, dur(r.p50), dur(r.p99), dur(r.reqP50), dur(r.reqP99),
			dur(r.waitP99), dur(r.longestWait), r.slowWaits, r.fewest, r.most, perCycle(r.refused, r.cycles), perCycle(r.reads, r.cycles),
			r.errors, loadAvg(), stealCell(r.steal))
		if c.row.contended {
			t.Logf("acquires client by client (every third on the leader, from the third): %v", r.perClient)
		}
	}
	if !withHandOffs {
		return
	}
	for _, h := range handOffs {
		ds, err := h.run(cl, round)
		if err != nil {
			t.Fatalf("round %d, %s, hand-off %s: %v", round+1, sys.name, h.name, err)
		}
		res.addHandOff(sys.name, h.name, ds)
		t.Logf("round %d, %s, hand-off %s: median %v, max %v", round+1, sys.name, h.name,
			dur(median(ds)), dur(percentile(ds, 1)))
	}
}

// benchProcs is one 3-server cluster of either system, started with the
// same flags (tenure takes Consul's).
type benchProcs struct {
	*proccluster.Cluster
	t     *testing.T
	https []string // each server's HTTP address, followers first
}

// startBenchProcs starts sys's cluster with its data directories in base
// and waits until every server serves.
func startBenchProcs(t *testing.T, base string, sys benchSystem) *benchProcs {
	t.Helper()
	// info, not debug: a log line per request would be part of what is measured.
	cl := &benchProcs{t: t, Cluster: proccluster.Up(t, sys.bin,
		proccluster.Options{Name: sys.name, LogLevel: "info", Flags: sys.args, DataIn: base})}
	// Followers first, so that client 0 (the whole 1-client row) talks to
	// a follower on both systems, as most clients of a 3-server cluster
	// do; which server won the election would otherwise decide whether
	// that row pays the forwarding hop.
	lead := cl.Leader(0)
	for i, nd := range cl.Nodes {
		if i != lead {
			cl.https = append(cl.https, nd.HTTPAddr())
		}
	}
	cl.https = append(cl.https, cl.Nodes[lead].HTTPAddr())
	return cl
}

// client is a consul/api client of server i with a transport of its own,
// so no two bench clients share a connection pool.
func (cl *benchProcs) client(i int) *api.Client {
	c, err := api.NewClient(&api.Config{Address: cl.https[i%len(cl.https)], Transport: &http.Transport{
		MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}})
	if err != nil {
		cl.t.Fatal(err)
	}
	return c
}

// windowUse is what a measured window cost the machine: the CPU time the
// servers used (0 if it cannot be read: not Linux, a server gone) and the
// share the hypervisor stole (-1 if it cannot be read).
type windowUse struct {
	cpu   time.Duration
	steal float64
}

// useOver reads the servers' CPU time and the machine's stolen time when
// from comes and again when to comes.
func (cl *benchProcs) useOver(from, to time.Time) windowUse {
	var pids []int
	for _, nd := range cl.Nodes {
		pids = append(pids, nd.Proc.Pid())
	}
	time.Sleep(time.Until(from))
	cpuBefore, cpuErr := procCPU(pids)
	ticksBefore, ticksErr := machineTicks()
	time.Sleep(time.Until(to))
	cpuAfter, err := procCPU(pids)
	cpuErr = errors.Join(cpuErr, err)
	ticksAfter, err := machineTicks()
	ticksErr = errors.Join(ticksErr, err)
	use := windowUse{steal: -1}
	if cpuErr == nil {
		use.cpu = cpuAfter - cpuBefore
	}
	if ticksErr == nil {
		use.steal = stealShare(ticksBefore, ticksAfter)
	}
	return use
}

// loadAvg is the 1, 5 and 15 minute load averages, to show how busy the
// machine was besides the benchmark.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// commitRef names the commit the benchmark ran on, marked when the work
// tree has changes.
func commitRef() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	ref := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		ref += " (with uncommitted changes)"
	}
	return ref
}

func benchHeader(systems []benchSystem, rounds int, measure, warmUp time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "commit %s, nproc %d, GOMAXPROCS %d, %d round(s), %v measured per row after %v warm-up, load average %s before\n",
		commitRef(), runtime.NumCPU(), runtime.GOMAXPROCS(0), rounds, measure, warmUp, loadAvg())
	for _, s := range systems {
		v := "tenure built fresh from this tree"
		if s.name == "Consul" {
			out, err := exec.Command(s.bin, "version").Output()
			v = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
			if err != nil {
				v = "version unknown: " + err.Error()
			}
		}
		fmt.Fprintf(&b, "%s: %s\n", s.name, v)
	}
	return b.String()
}
