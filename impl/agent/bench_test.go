package agent_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// The benchmarks drive tenure through Consul's own Go client, as a user
// would: against a dev agent (one in-memory node) and a three-node loopback
// cluster on the durable stores (raft-wal, fsync on every append), talking
// to the leader directly or to a follower that forwards. Each reports ops/s
// and the p50/p99 latency of one whole cycle.
//
//	go test ./impl/agent -run '^$' -bench . -benchtime 2s
//
// With TENURE_BENCH_ADDR set (e.g. http://127.0.0.1:8500) the same bodies
// run against that Consul-API server instead, as target "addr", so tenure
// and a real Consul can be measured on one machine with one client.
//
//	TENURE_BENCH_ADDR=http://127.0.0.1:8500 go test ./impl/agent -run '^$' -bench /addr

const envBenchAddr = "TENURE_BENCH_ADDR"

type target struct {
	name  string
	start func(b *testing.B) string // returns the HTTP address to talk to
	// shared: the server outlives the benchmark, so each run works under
	// its own key prefix and removes its sessions and keys afterwards.
	shared bool
}

var targets = []target{
	{name: "dev", start: func(b *testing.B) string { return agenttest.StartDevAgent(b, nil).HTTPAddr() }},
	{name: "cluster3-durable/leader", start: func(b *testing.B) string { return clusterAddr(b, true) }},
	{name: "cluster3-durable/follower", start: func(b *testing.B) string { return clusterAddr(b, false) }},
}

// benchTargets is targets, or only the TENURE_BENCH_ADDR server when set.
func benchTargets() []target {
	addr := os.Getenv(envBenchAddr)
	if addr == "" {
		return targets
	}
	return []target{{name: "addr", shared: true, start: func(*testing.B) string { return addr }}}
}

// runSeq makes key prefixes unique across the runs of one process, so a
// shared server never sees a key still held from an earlier run.
var runSeq atomic.Int64

// prefix returns this run's key prefix; on a shared server it also removes
// the run's keys and the given sessions when the run ends (untimed).
func (tg target) prefix(b *testing.B, c *api.Client, sids *[]string) string {
	p := fmt.Sprintf("bench/%d-%d/", time.Now().UnixNano(), runSeq.Add(1))
	if tg.shared {
		b.Cleanup(func() {
			for _, sid := range *sids {
				if _, err := c.Session().Destroy(sid, nil); err != nil {
					b.Errorf("cleanup: destroy session %s: %v", sid, err)
					return
				}
			}
			if _, err := c.KV().DeleteTree(p, nil); err != nil {
				b.Errorf("cleanup: delete %s: %v", p, err)
			}
		})
	}
	return p
}

func clusterAddr(b *testing.B, leader bool) string {
	cl := agenttest.StartCluster(b, 3, agenttest.ClusterOptions{Durable: true})
	lead := cl.Leader()
	if lead == nil {
		b.Fatal("no leader")
	}
	for _, a := range cl.Agents {
		if (a == lead) == leader {
			return a.HTTPAddr()
		}
	}
	return ""
}

// latencies collects per-op durations from any number of goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, elapsed time.Duration) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	pct := func(p float64) float64 {
		return float64(l.d[min(len(l.d)-1, int(p*float64(len(l.d))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(l.d))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// run times op b.N times over par goroutines (par 1: one client in turn).
func run(b *testing.B, par int, op func(worker, i int) error) {
	var (
		lat  latencies
		next atomic.Int64
		wg   sync.WaitGroup
		fail atomic.Value
	)
	b.ResetTimer()
	start := time.Now()
	cpu0 := processCPU()
	for w := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t0 := time.Now()
				if err := op(w, i); err != nil {
					fail.CompareAndSwap(nil, err)
					return
				}
				lat.add(time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	// CPU time per cycle of the whole process (servers and clients alike)
	// compares code changes even on a machine that other work shares,
	// where ops/s would mostly measure the neighbours.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	if err, _ := fail.Load().(error); err != nil {
		b.Fatal(err)
	}
	lat.report(b, elapsed)
}

func acquireRelease(c *api.Client, key, sid string) error {
	ok, _, err := c.KV().Acquire(&api.KVPair{Key: key, Value: []byte("held"), Session: sid}, nil)
	if err != nil || !ok {
		return fmt.Errorf("acquire %s: %v %v", key, ok, err)
	}
	ok, _, err = c.KV().Release(&api.KVPair{Key: key, Session: sid}, nil)
	if err != nil || !ok {
		return fmt.Errorf("release %s: %v %v", key, ok, err)
	}
	return nil
}

// BenchmarkAcquireRelease: one session per client, acquire then release of
// the client's own key. par=16 shows throughput under concurrent clients.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, tg := range benchTargets() {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/clients=%d", tg.name, par), func(b *testing.B) {
				c := client(b, tg.start(b))
				var sids []string
				pre := tg.prefix(b, c, &sids)
				for range par {
					sid, _, err := c.Session().CreateNoChecks(nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					sids = append(sids, sid)
				}
				run(b, par, func(w, _ int) error {
					return acquireRelease(c, fmt.Sprintf("%slock/%d", pre, w), sids[w])
				})
			})
		}
	}
}

// BenchmarkCreateAcquireRelease: a fresh session for every cycle, as a
// short-lived job taking a lock would do (sessions are left to accumulate
// during the run).
func BenchmarkCreateAcquireRelease(b *testing.B) {
	for _, tg := range benchTargets() {
		b.Run(tg.name, func(b *testing.B) {
			c := client(b, tg.start(b))
			var sids []string // only one goroutine appends (par 1)
			pre := tg.prefix(b, c, &sids)
			run(b, 1, func(_, i int) error {
				sid, _, err := c.Session().Create(&api.SessionEntry{TTL: "30s"}, nil)
				if err != nil {
					return fmt.Errorf("create: %w", err)
				}
				if tg.shared {
					sids = append(sids, sid)
				}
				return acquireRelease(c, pre+"job", sid)
			})
		})
	}
}

// processCPU is the user plus system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
