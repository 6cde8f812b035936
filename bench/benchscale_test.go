package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// Sizes of `make bench-scale` (issue 17).
const (
	scaleSessions = 10_000
	scaleKeys     = 100_000
	scaleValue    = 64 // bytes per value
	scaleTxnOps   = 64 // KV sets per /v1/txn
	scaleWatchers = 10_000
	// rssSettle is waited before each RSS reading, so the allocations of
	// the phase just ended have been collected; what the runtime keeps of
	// its heap after that still counts in RSS.
	rssSettle = 5 * time.Second
)

// TestBenchScale measures, on a durable 3-server cluster of real processes,
// the RSS of the leader and a follower after start, after 10k sessions and
// after 100k keys, then 10k blocking reads parked (a) on one key and (b) on
// 10k keys: their memory and how long after the write each one returns.
// With TENURE_BENCH_SCALE_CONSUL (a consul binary) the same runs on Consul
// too. A measurement, not a test: nothing is asserted on its numbers.
//
//	make bench-scale CONSUL=/path/to/consul
func TestBenchScale(t *testing.T) {
	if os.Getenv("TENURE_BENCH_SCALE") == "" {
		t.Skip("set TENURE_BENCH_SCALE=1 (make bench-scale) to measure blocking queries and memory at scale")
	}
	// 10k watchers hold 10k client sockets here and as many on the
	// servers; children inherit the limit set with Setrlimit. A container
	// may refuse to raise the hard limit; the soft one then goes up to it.
	lim := syscall.Rlimit{Cur: 1 << 17, Max: 1 << 17}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatalf("raise RLIMIT_NOFILE: %v", err)
		}
	}
	bin := proccluster.BuildTenure(t)
	systems := []scaleSystem{{name: "tenure", bin: bin}}
	if c := os.Getenv("TENURE_BENCH_SCALE_CONSUL"); c != "" {
		// Consul allows 200 HTTP connections per client address by
		// default; every watcher here comes from 127.0.0.1. It refuses to
		// start with a cap above RLIMIT_NOFILE-20. tenure has no such cap
		// (it ignores the limits block).
		maxConns := min(30000, lim.Cur-100)
		systems = append(systems, scaleSystem{name: "consul", bin: c,
			extra: []string{"-hcl", fmt.Sprintf("limits { http_max_conns_per_client = %d }", maxConns)}})
	}
	// Each table goes out as soon as its system is done, so a later
	// system's failure does not lose it.
	emit := func(s string) {
		fmt.Print(s)
		t.Log(s)
	}
	emit(fmt.Sprintf("\nbench-scale: commit %s, nproc %d, %s, RLIMIT_NOFILE %d; values %d B, txns of %d ops\n"+
		"RSS is VmRSS, read %v after each phase; it includes the heap a Go runtime keeps after collecting\n",
		commitRef(), runtime.NumCPU(), runtime.Version(), lim.Cur, scaleValue, scaleTxnOps, rssSettle))
	for _, sys := range systems {
		emit(benchScaleSystem(t, sys).table())
	}
}

type scaleSystem struct {
	name, bin string
	extra     []string // agent flags for this system only
}

// scaleReport is what one system measured. RSS values are KiB, indexed
// by server; lead and fol name the servers reported in the memory rows.
type scaleReport struct {
	sys                    scaleSystem
	version                string
	lead, fol              int
	base, sessions, keys   [3]int64
	sessionsTook, keysTook time.Duration
	one, many              watchReport
	unwatched              time.Duration // (b)'s txns again, once no watcher is parked
}

type watchReport struct {
	name           string
	lead           int // the leader after the restart before this phase
	before, parked [3]int64
	parkTook       time.Duration
	writeTook      time.Duration // the PUT in (a); all txns in (b)
	wake           latencies
	early, failed  int // returned before the write; errors or no answer
	firstErr       string
	note           string // the sockets did not settle, or the leader moved
	files          [3]int // each server's open descriptors while parked
}

// mib formats KiB as MiB.
func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

func (r scaleReport) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s (%s): 3 servers on 127.0.0.1, durable, -log-level info %s\n", r.sys.name, r.version, strings.Join(r.sys.extra, " "))
	fmt.Fprintf(&b, "%-44s %10s %10s\n", "RSS, MiB", "leader", "follower")
	row := func(what string, v [3]int64) {
		fmt.Fprintf(&b, "%-44s %10s %10s\n", what, mib(v[r.lead]), mib(v[r.fol]))
	}
	row("after start", r.base)
	row(fmt.Sprintf("after %dk sessions (%v)", scaleSessions/1000, r.sessionsTook.Round(time.Second)), r.sessions)
	fmt.Fprintf(&b, "%-44s %10s %10s\n", "  per 10k sessions", mib(r.sessions[r.lead]-r.base[r.lead]), mib(r.sessions[r.fol]-r.base[r.fol]))
	row(fmt.Sprintf("after %dk keys of %d B (%v)", scaleKeys/1000, scaleValue, r.keysTook.Round(time.Second)), r.keys)
	fmt.Fprintf(&b, "%-44s %10s %10s\n", "  per 100k keys", mib(r.keys[r.lead]-r.sessions[r.lead]), mib(r.keys[r.fol]-r.sessions[r.fol]))
	fmt.Fprintf(&b, "\n%d blocking reads (wait=5m, default consistency), spread evenly over the 3 servers\n(a follower forwards its reads to the leader); all 3 servers restarted (kill -9, same data dirs) before each\n", scaleWatchers)
	fmt.Fprintf(&b, "%-12s %9s %9s %9s %9s %8s %8s %8s %8s %6s %6s  %s\n", "watchers", "RSS sum", "parked", "KiB/w",
		"park", "write", "p50", "p99", "max", "early", "failed", "increase: leader, followers")
	for _, w := range []watchReport{r.one, r.many} {
		var before, parked int64
		for i := range 3 {
			before += w.before[i]
			parked += w.parked[i]
		}
		var rise []string
		for _, i := range []int{w.lead, (w.lead + 1) % 3, (w.lead + 2) % 3} {
			rise = append(rise, "+"+mib(w.parked[i]-w.before[i]))
		}
		fmt.Fprintf(&b, "%-12s %9s %9s %9.1f %9v %8v %8v %8v %8v %6d %6d  %s\n", w.name, mib(before), mib(parked),
			float64(parked-before)/scaleWatchers, w.parkTook.Round(100*time.Millisecond), w.writeTook.Round(time.Millisecond),
			w.wake.p50.Round(time.Millisecond), w.wake.p99.Round(time.Millisecond), w.wake.max.Round(time.Millisecond),
			w.early, w.failed, strings.Join(rise, " "))
		fmt.Fprintf(&b, "  %s: open files while parked: leader %d, followers %d %d\n", w.name, w.files[w.lead],
			w.files[(w.lead+1)%3], w.files[(w.lead+2)%3])
		if w.firstErr != "" {
			fmt.Fprintf(&b, "  %s: first failure: %s\n", w.name, w.firstErr)
		}
		if w.note != "" {
			fmt.Fprintf(&b, "  %s: %s\n", w.name, w.note)
		}
	}
	fmt.Fprintf(&b, "RSS sum/parked: the 3 servers' RSS in MiB before and with the watchers parked; KiB/w = the difference / %d\n", scaleWatchers)
	fmt.Fprintf(&b, "(client sockets and goroutines of this test process not counted); increase: each server's, in MiB.\n")
	fmt.Fprintf(&b, "park: from the first GET until the servers' open files were steady for 2 s; write: the PUT (one key) or the\n")
	fmt.Fprintf(&b, "%d txns one after another (10k keys), through the leader. p50/p99/max: from the ack of the write of the\n", (scaleWatchers+scaleTxnOps-1)/scaleTxnOps)
	fmt.Fprintf(&b, "watcher's key until its GET returned (negative: before the writer saw the ack). The same txns with no\n")
	fmt.Fprintf(&b, "watcher parked, afterwards: %v.\n", r.unwatched.Round(time.Millisecond))
	return b.String()
}

func benchScaleSystem(t *testing.T, sys scaleSystem) scaleReport {
	r := scaleReport{sys: sys}
	if out, err := exec.Command(sys.bin, "version").Output(); err == nil {
		r.version = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	c := startScaleCluster(t, sys)
	defer c.close()
	r.lead = c.leader()
	r.fol = (r.lead + 1) % 3
	r.base = c.rssAll()

	start := time.Now()
	c.createSessions()
	r.sessionsTook = time.Since(start)
	r.sessions = c.rssAll()

	start = time.Now()
	c.writeKeys()
	r.keysTook = time.Since(start)
	r.keys = c.rssAll()
	t.Logf("%s: memory phases done: %v %v %v", sys.name, r.base, r.sessions, r.keys)

	// (a) every watcher on one key.
	c.restart()
	key := scaleKey(0)
	_, idx := c.get(c.leader(), "/v1/kv/"+key)
	keys := make([]string, scaleWatchers)
	idxs := make([]uint64, scaleWatchers)
	for i := range keys {
		keys[i], idxs[i] = key, idx
	}
	// A set that changes nothing does not move a key's ModifyIndex (in
	// Consul either), so each phase writes a value of its own.
	var putTook time.Duration
	r.one = c.watch("one key", keys, idxs, func(lead int) []time.Time {
		start := time.Now()
		c.put(lead, "/v1/kv/"+key, []byte("changed in phase a"))
		ack := time.Now()
		putTook = ack.Sub(start)
		acks := make([]time.Time, scaleWatchers)
		for i := range acks {
			acks[i] = ack
		}
		return acks
	})
	r.one.writeTook = putTook
	t.Logf("%s: one key: %+v", sys.name, r.one)

	// (b) one watcher on each of 10k keys, all written afterwards in
	// txns, one after another, each watcher timed from its own txn's ack.
	c.restart()
	_, idx = c.get(c.leader(), "/v1/kv/bench/?keys")
	for i := range keys {
		keys[i], idxs[i] = scaleKey(i), idx
	}
	var txnsTook time.Duration
	r.many = c.watch("10k keys", keys, idxs, func(lead int) []time.Time {
		acks := make([]time.Time, scaleWatchers)
		start := time.Now()
		for lo := 0; lo < scaleWatchers; lo += scaleTxnOps {
			hi := min(lo+scaleTxnOps, scaleWatchers)
			c.put(lead, "/v1/txn", txnBody(lo, hi, []byte("changed in phase b")))
			ack := time.Now()
			for i := lo; i < hi; i++ {
				acks[i] = ack
			}
		}
		txnsTook = time.Since(start)
		return acks
	})
	r.many.writeTook = txnsTook
	// The same txns with nobody watching: what the parked reads cost the
	// writer.
	lead := c.leader()
	start = time.Now()
	for lo := 0; lo < scaleWatchers; lo += scaleTxnOps {
		c.put(lead, "/v1/txn", txnBody(lo, min(lo+scaleTxnOps, scaleWatchers), []byte("changed with no watcher")))
	}
	r.unwatched = time.Since(start)
	t.Logf("%s: 10k keys: %+v", sys.name, r.many)
	return r
}

func scaleKey(i int) string { return fmt.Sprintf("bench/k%06d", i) }

// scaleCluster is one system's 3 servers and the HTTP client of the
// setup traffic (the watchers have their own).
type scaleCluster struct {
	*proccluster.Cluster
	t    *testing.T
	sys  scaleSystem
	http *http.Client
}

// startScaleCluster starts sys's servers and waits until they serve;
// close, registered with t, stops them.
func startScaleCluster(t *testing.T, sys scaleSystem) *scaleCluster {
	t.Helper()
	c := &scaleCluster{t: t, sys: sys, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 2 * time.Minute},
		Cluster: proccluster.Up(t, sys.bin, proccluster.Options{Name: sys.name, LogLevel: "info", Flags: sys.extra})}
	t.Cleanup(c.close)
	return c
}

// close kills every server still running; it may run twice.
func (c *scaleCluster) close() {
	c.Close()
	c.http.CloseIdleConnections()
}

// restart kills all three servers and starts them on their data
// directories, so the watcher phases start from a fresh heap: a Go process
// keeps freed heap for minutes, which would hide the watchers' memory.
func (c *scaleCluster) restart() {
	c.t.Helper()
	for i := range c.Nodes {
		c.Kill(i)
	}
	c.http.CloseIdleConnections()
	for i := range c.Nodes {
		c.Start(i)
	}
	for i := range c.Nodes {
		c.WaitReady(i)
	}
}

func (c *scaleCluster) url(i int, path string) string {
	return "http://" + c.Nodes[i].HTTPAddr() + path
}

// call sends one request and returns the body and X-Consul-Index.
func (c *scaleCluster) call(i int, method, path string, body []byte) (int, []byte, uint64, error) {
	req, err := http.NewRequest(method, c.url(i, path), bytes.NewReader(body))
	if err != nil {
		return 0, nil, 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Consul-Index"), 10, 64)
	return resp.StatusCode, b, idx, nil
}

func (c *scaleCluster) mustCall(i int, method, path string, body []byte) ([]byte, uint64) {
	c.t.Helper()
	code, b, idx, err := c.call(i, method, path, body)
	if err != nil {
		c.t.Fatalf("%s: %s %s on %s: %v (logs in %s)", c.sys.name, method, path, c.Nodes[i].Name(), err, c.LogDir)
	}
	if code != http.StatusOK {
		c.t.Fatalf("%s: %s %s on %s: %d %s (logs in %s)", c.sys.name, method, path, c.Nodes[i].Name(), code, b, c.LogDir)
	}
	return b, idx
}

func (c *scaleCluster) get(i int, path string) ([]byte, uint64) {
	return c.mustCall(i, "GET", path, nil)
}

func (c *scaleCluster) put(i int, path string, body []byte) { c.mustCall(i, "PUT", path, body) }

// txnBody sets keys lo..hi-1 to value: the body of one /v1/txn.
func txnBody(lo, hi int, value []byte) []byte {
	type kv struct{ Verb, Key, Value string }
	ops := make([]map[string]kv, 0, hi-lo)
	for k := lo; k < hi; k++ {
		ops = append(ops, map[string]kv{"KV": {Verb: "set", Key: scaleKey(k), Value: base64.StdEncoding.EncodeToString(value)}})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return body
}

// leader returns the index of the server that leads.
func (c *scaleCluster) leader() int { return c.Leader(0) }

// rssAll waits rssSettle and reads every server's VmRSS (KiB).
func (c *scaleCluster) rssAll() [3]int64 {
	c.t.Helper()
	time.Sleep(rssSettle)
	var out [3]int64
	for i, nd := range c.Nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", nd.Proc.Pid()))
		if err != nil {
			c.t.Fatalf("%s %s: %v", c.sys.name, nd.Name(), err)
		}
		if out[i], err = vmRSS(string(b)); err != nil {
			c.t.Fatalf("%s %s: %v", c.sys.name, nd.Name(), err)
		}
	}
	return out
}

// openFiles counts server i's file descriptors (its sockets, mostly).
func (c *scaleCluster) openFiles(i int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.Nodes[i].Proc.Pid()))
	if err != nil {
		c.t.Fatalf("%s: %v", c.sys.name, err)
	}
	return len(es)
}

// parallel runs fn(0..n-1) on workers goroutines; the first error fails
// the test.
func (c *scaleCluster) parallel(n, workers int, fn func(i int) error) {
	c.t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		c.t.Fatalf("%s: %v (logs in %s)", c.sys.name, first, c.LogDir)
	}
}

// createSessions creates scaleSessions sessions bound to no check, through
// the three servers in turn. No checks, so that the restarts before the
// watcher phases, when a node's serfHealth may go critical for a moment,
// invalidate none of them.
func (c *scaleCluster) createSessions() {
	c.parallel(scaleSessions, 32, func(i int) error {
		body := fmt.Appendf(nil, `{"Name":"bench-%d","NodeChecks":[]}`, i)
		code, b, _, err := c.call(i%3, "PUT", "/v1/session/create", body)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("session %d: %d %s %v", i, code, b, err)
		}
		return nil
	})
}

// writeKeys writes scaleKeys keys of scaleValue bytes in txns of
// scaleTxnOps sets, through the three servers in turn.
func (c *scaleCluster) writeKeys() {
	value := []byte(strings.Repeat("v", scaleValue))
	txns := (scaleKeys + scaleTxnOps - 1) / scaleTxnOps
	c.parallel(txns, 8, func(j int) error {
		lo := j * scaleTxnOps
		hi := min(lo+scaleTxnOps, scaleKeys)
		code, b, _, err := c.call(j%3, "PUT", "/v1/txn", txnBody(lo, hi, value))
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("txn %d: %d %.200s %v", j, code, b, err)
		}
		return nil
	})
}

// watch parks one blocking GET per keys[i] (at idxs[i]) on server i%3,
// waits until they are parked, reads RSS, calls write (with the leader's
// index) which returns for each watcher the moment its write was
// acknowledged, and times every watcher from that moment to its answer.
func (c *scaleCluster) watch(name string, keys []string, idxs []uint64, write func(lead int) []time.Time) watchReport {
	c.t.Helper()
	lead := c.leader()
	w := watchReport{name: name, lead: lead}
	w.before = c.rssAll()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		at   time.Time
		code int
		body string // the start of an answer other than 200
		err  error
	}
	results := make([]result, len(keys))
	var done sync.WaitGroup
	var wrote sync.WaitGroup
	var returned atomic.Int64
	// Few dials at a time, so the servers' accept queues never overflow
	// (a dropped SYN costs a second's retransmit, not a failure).
	dialing := make(chan struct{}, 256)
	var transports []*http.Transport
	var client *http.Client
	start := time.Now()
	for i := range keys {
		if i%500 == 0 {
			// Every watcher holds its own connection: 500 per transport.
			tr := &http.Transport{MaxIdleConnsPerHost: 500, DisableCompression: true}
			transports = append(transports, tr)
			client = &http.Client{Transport: tr}
		}
		done.Add(1)
		wrote.Add(1)
		go func(i int, client *http.Client) {
			defer done.Done()
			var once sync.Once
			sent := func() { once.Do(func() { <-dialing; wrote.Done() }) }
			dialing <- struct{}{}
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { sent() }}
			u := c.url(i%3, fmt.Sprintf("/v1/kv/%s?index=%d&wait=5m", keys[i], idxs[i]))
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "GET", u, nil)
			if err != nil {
				sent()
				results[i] = result{err: err}
				return
			}
			resp, err := client.Do(req)
			sent()
			if err != nil {
				results[i] = result{at: time.Now(), err: err}
				returned.Add(1)
				return
			}
			var body []byte
			if resp.StatusCode != http.StatusOK {
				body, err = io.ReadAll(io.LimitReader(resp.Body, 300))
			} else {
				_, err = io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
			results[i] = result{at: time.Now(), code: resp.StatusCode, body: string(body), err: err}
			returned.Add(1)
		}(i, client)
	}
	wrote.Wait()
	// Parked: every request sent and the servers' descriptor counts
	// unchanged for 2 s (a follower opens one to the leader for each read
	// it forwards).
	var last [3]int
	stable := 0
	deadline := time.Now().Add(3 * time.Minute)
	for stable < 4 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		var now [3]int
		for i := range now {
			now[i] = c.openFiles(i)
		}
		if now == last {
			stable++
		} else {
			stable = 0
		}
		last = now
	}
	w.parkTook = time.Since(start)
	w.files = last
	if stable < 4 {
		w.note = fmt.Sprintf("servers' open files still changing after %v (%v); measured anyway; ", w.parkTook.Round(time.Second), last)
	}
	c.t.Logf("%s %s: parked after %v, open files %v, %d returned already", c.sys.name, name, w.parkTook, last, returned.Load())
	if now := c.leader(); now != lead {
		w.note += fmt.Sprintf("the leader moved from %s to %s while the watchers parked; ", c.Nodes[lead].Name(), c.Nodes[now].Name())
	}
	w.parked = c.rssAll()

	writeStart := time.Now()
	acks := write(lead)
	// Every watcher should answer at once; the bound only keeps a lost one
	// from holding the run for the whole wait.
	all := make(chan struct{})
	go func() { done.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		cancel()
		<-all
	}
	var ds []time.Duration
	for i, r := range results {
		switch {
		case r.err != nil || r.code != http.StatusOK:
			w.failed++
			if w.firstErr == "" {
				w.firstErr = fmt.Sprintf("watcher %d on %s, %v after the first GET, %v before the write: status %d %q, %v",
					i, c.Nodes[i%3].Name(), r.at.Sub(start).Round(time.Millisecond), writeStart.Sub(r.at).Round(time.Millisecond),
					r.code, strings.TrimSpace(r.body), r.err)
			}
		case r.at.Before(writeStart):
			w.early++
		default:
			ds = append(ds, r.at.Sub(acks[i]))
		}
	}
	w.wake = summarize(ds)
	if w.failed > 0 {
		// Not a bound on time: an answer other than the changed key is a
		// failure of the system measured, and keeps the logs.
		c.t.Errorf("%s %s: %d watchers failed; first: %s (logs in %s)", c.sys.name, name, w.failed, w.firstErr, c.LogDir)
	}
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	return w
}
