package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// The load rows of make bench-cluster: each client owns a session and runs
// acquire+release cycles on its own key or, on the contended rows, on one
// key shared by all. How a client waits for a held lock is its kind.

type benchRow struct {
	id        string // as ROWS names it
	name      string
	clients   int
	contended bool // one key for all clients
}

var benchRows = []benchRow{
	{"1", "1 client", 1, false},
	{"16", "16 clients", 16, false},
	{"64", "64 clients", 64, false},
	{"8one", "8 clients, one key", 8, true},
	{"64one", "64 clients, one key", 64, true},
}

// loadKind is one client program. Every kind speaks HTTP through a
// recordingTransport, so a request is timed the same way whoever sends it.
type loadKind struct {
	id   string // as CLIENTS names it
	name string
	run  func(ctx context.Context, e *loadEnv) error
}

var loadKinds = []loadKind{
	// The spinning client: acquire, and on false again at once.
	{"spin", "spin (plain HTTP)", runSpin},
	// consul/api's Lock, as applications use it: a blocking read until
	// the key is free, then an acquire, and a monitor while it is held.
	{"lock", "consul/api Lock", runAPILock},
	// The rows of earlier sittings: consul/api's KV calls, waiting for a
	// held key with a blocking read as Lock does but without its monitor
	// or its 5 s sleep after an acquire lost on a free key.
	{"kv", "consul/api KV", runAPIKV},
}

// kindByID is the kind CLIENTS names id; it panics on an id no kind has,
// which only the bench's own code passes.
func kindByID(id string) loadKind {
	for _, k := range loadKinds {
		if k.id == id {
			return k
		}
	}
	panic("no client kind " + id)
}

// defaultKinds are the kinds a run without CLIENTS measures.
const defaultKinds = "spin,lock"

// benchCase is one row run by one kind of client.
type benchCase struct {
	row  benchRow
	kind loadKind
}

func (c benchCase) key() string { return c.row.id + "/" + c.kind.id }

// pickCases is every row of rows (ids, comma-separated; empty for all) run
// by every kind of kinds, rows outermost, in benchRows' and loadKinds'
// order.
func pickCases(rows, kinds string) ([]benchCase, error) {
	pick := func(list string, ids []string) (map[string]bool, error) {
		want := map[string]bool{}
		if list == "" {
			for _, id := range ids {
				want[id] = true
			}
			return want, nil
		}
		for _, id := range strings.Split(list, ",") {
			id = strings.TrimSpace(id)
			found := false
			for _, known := range ids {
				found = found || known == id
			}
			if !found {
				return nil, fmt.Errorf("unknown %q (known: %s)", id, strings.Join(ids, ","))
			}
			want[id] = true
		}
		return want, nil
	}
	var rowIDs, kindIDs []string
	for _, r := range benchRows {
		rowIDs = append(rowIDs, r.id)
	}
	for _, k := range loadKinds {
		kindIDs = append(kindIDs, k.id)
	}
	if kinds == "" {
		kinds = defaultKinds
	}
	wantRows, err := pick(rows, rowIDs)
	if err != nil {
		return nil, fmt.Errorf("ROWS: %w", err)
	}
	wantKinds, err := pick(kinds, kindIDs)
	if err != nil {
		return nil, fmt.Errorf("CLIENTS: %w", err)
	}
	var cases []benchCase
	for _, r := range benchRows {
		for _, k := range loadKinds {
			if wantRows[r.id] && wantKinds[k.id] {
				cases = append(cases, benchCase{r, k})
			}
		}
	}
	return cases, nil
}

type rowResult struct {
	rate float64
	// p50, p99: whole cycles, from the first acquire attempt (or Lock
	// call) until the release is answered.
	p50, p99 time.Duration
	// reqP50, reqP99: single requests, each acquire attempt and each
	// release, from sending it until its answer is read.
	reqP50, reqP99 time.Duration
	// waitP99: from a cycle's start until it holds the lock (for a Lock
	// client, Lock's call); longestWait also counts a wait still going
	// when the window closed, so a client that never got the lock shows.
	waitP99, longestWait time.Duration
	// slowWaits counts the waits of a second or more, unfinished ones too.
	slowWaits int
	// slowRequests and slowInWindow: the requests over slowFactor × the
	// median and the share of them that started in one phaseWindow of the
	// wall clock (slowByPhase).
	slowRequests int
	slowInWindow float64
	// fewest and most acquires one client made in the window; perClient
	// is each client's, in client order (client i talks to server i%3,
	// the leader third).
	fewest, most int
	perClient    []int
	errors       int
	// What the cycles cost besides their own two writes: refused acquires
	// and reads of the key, over every cycle of the row, warm-up included.
	cycles, refused, reads int
	// cpuPerCycle is the three servers' CPU time over the measured window
	// divided by the cycles in it; 0 where /proc cannot tell.
	cpuPerCycle time.Duration
	// steal is the share of the machine's CPU the hypervisor took over the
	// measured window; -1 where /proc cannot tell.
	steal float64
}

// clientRec is what one client did. The transport, the client's loop
// and consul/api's monitor goroutine all write to it.
type clientRec struct {
	from, to time.Time // the measured window

	mu       sync.Mutex
	requests []time.Duration // acquire attempts and releases answered in the window
	starts   []time.Time     // when each of requests was sent
	cycles   []time.Duration // cycles that ended in the window
	waits    []time.Duration // waits for holds taken in the window
	held     int             // holds taken in the window
	longest  time.Duration
	slow     int // waits of a second or more
	// Over the whole row, warm-up included.
	allCycles, refused, reads, errors int
}

func (r *clientRec) in(t time.Time) bool { return !t.Before(r.from) && !t.After(r.to) }

func (r *clientRec) request(t0, t1 time.Time, refused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in(t1) {
		r.requests = append(r.requests, t1.Sub(t0))
		r.starts = append(r.starts, t0)
	}
	if refused {
		r.refused++
	}
}

func (r *clientRec) read() {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
}

// hold notes that a cycle begun at start holds the lock at at.
func (r *clientRec) hold(start, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in(at) {
		r.waits = append(r.waits, at.Sub(start))
		r.held++
		r.longest = max(r.longest, at.Sub(start))
		if at.Sub(start) >= time.Second {
			r.slow++
		}
	}
}

// unfinished notes a wait begun at start that the window's end cut.
func (r *clientRec) unfinished(start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if start.Before(r.to) {
		r.longest = max(r.longest, r.to.Sub(start))
		if r.to.Sub(start) >= time.Second {
			r.slow++
		}
	}
}

func (r *clientRec) cycle(start, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allCycles++
	if r.in(end) {
		r.cycles = append(r.cycles, end.Sub(start))
	}
}

// failed counts a failed request; past 100 the client gives up with err.
func (r *clientRec) failed(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors++
	if r.errors > 100 {
		return fmt.Errorf("a client gave up after 100 errors: %w", err)
	}
	return nil
}

// recordingTransport times each acquire and release a client sends,
// reading the answer's body before it stops the clock, and counts the
// refused acquires and the reads.
type recordingTransport struct {
	base http.RoundTripper
	rec  *clientRec
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	acquire := strings.Contains(req.URL.RawQuery, "acquire=")
	lockOp := req.Method == http.MethodPut && (acquire || strings.Contains(req.URL.RawQuery, "release="))
	if req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/v1/kv/") {
		t.rec.read()
	}
	t0 := time.Now()
	resp, err := t.base.RoundTrip(req)
	if err != nil || !lockOp {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	t.rec.request(t0, time.Now(), acquire && resp.StatusCode == http.StatusOK && bytes.Equal(bytes.TrimSpace(body), []byte("false")))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// loadEnv is one client's setting.
type loadEnv struct {
	addr, key, sid string
	http           *http.Client // through the client's recordingTransport
	api            *api.Client  // over http
	to             time.Time    // the window's end: no cycle starts after it
	rec            *clientRec
}

// retry counts err and pauses, or returns the error that ends the
// client: its context's (nil: the row is over) or too many failures.
func (e *loadEnv) retry(ctx context.Context, err error) (stop bool, _ error) {
	if ctx.Err() != nil {
		return true, nil
	}
	if err := e.rec.failed(err); err != nil {
		return true, err
	}
	time.Sleep(10 * time.Millisecond)
	return false, nil
}

// put sends a bodiless PUT and reads a true or false answer.
func (e *loadEnv) put(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, nil)
	if err != nil {
		return false, fmt.Errorf("request: %w", err)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("PUT %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return false, fmt.Errorf("PUT %s: read answer: %w", url, err)
	}
	switch s := string(bytes.TrimSpace(body)); {
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("PUT %s: %s: %s", url, resp.Status, s)
	case s == "true":
		return true, nil
	case s == "false":
		return false, nil
	default:
		return false, fmt.Errorf("PUT %s: answer %q", url, s)
	}
}

// runSpin: acquire; on false acquire again at once; on true release.
func runSpin(ctx context.Context, e *loadEnv) error {
	base := "http://" + e.addr + "/v1/kv/" + e.key
	acquire, release := base+"?acquire="+e.sid, base+"?release="+e.sid
	for time.Now().Before(e.to) {
		start := time.Now()
		for {
			ok, err := e.put(ctx, acquire)
			if err != nil {
				if stop, err := e.retry(ctx, err); stop {
					e.rec.unfinished(start)
					return err
				}
				continue
			}
			if ok {
				break
			}
			if !time.Now().Before(e.to) {
				e.rec.unfinished(start)
				return nil
			}
		}
		e.rec.hold(start, time.Now())
		for {
			ok, err := e.put(ctx, release)
			if err == nil && !ok {
				return fmt.Errorf("release of %s refused", e.key)
			}
			if err == nil {
				break
			}
			if stop, err := e.retry(ctx, err); stop {
				return err
			}
		}
		e.rec.cycle(start, time.Now())
	}
	return nil
}

// runAPILock: consul/api's Lock on the client's own session, then Unlock.
// LockWaitTime is shortened from 15 s so that a waiter notices the window's
// end within a second; a blocking read that times out is just read again.
func runAPILock(ctx context.Context, e *loadEnv) error {
	l, err := e.api.LockOpts(&api.LockOptions{Key: e.key, Session: e.sid, LockWaitTime: time.Second})
	if err != nil {
		return fmt.Errorf("lock options: %w", err)
	}
	stop := make(chan struct{})
	timer := time.AfterFunc(time.Until(e.to), func() { close(stop) })
	defer timer.Stop()
	for time.Now().Before(e.to) {
		start := time.Now()
		ch, err := l.Lock(stop)
		if err != nil {
			if stop, err := e.retry(ctx, err); stop {
				e.rec.unfinished(start)
				return err
			}
			continue
		}
		if ch == nil { // the window closed while it waited
			e.rec.unfinished(start)
			return nil
		}
		e.rec.hold(start, time.Now())
		for {
			err := l.Unlock()
			if err == nil || errors.Is(err, api.ErrLockNotHeld) {
				break
			}
			if stop, err := e.retry(ctx, err); stop {
				return err
			}
		}
		e.rec.cycle(start, time.Now())
	}
	return nil
}

// runAPIKV: consul/api's Acquire and Release; after a refused acquire a
// blocking read of the key from the last index seen until it is free, then
// another acquire.
func runAPIKV(ctx context.Context, e *loadEnv) error {
	kv := e.api.KV()
	wo := (&api.WriteOptions{}).WithContext(ctx)
	qo := (&api.QueryOptions{}).WithContext(ctx)
	pair := &api.KVPair{Key: e.key, Session: e.sid}
	for time.Now().Before(e.to) {
		start := time.Now()
		ok, _, err := kv.Acquire(pair, wo)
		var index uint64
		for err == nil && !ok && time.Now().Before(e.to) {
			q := *qo
			q.WaitIndex, q.WaitTime = index, time.Until(e.to)+time.Second
			var p *api.KVPair
			var meta *api.QueryMeta
			p, meta, err = kv.Get(pair.Key, &q)
			if err != nil {
				break
			}
			index = meta.LastIndex
			if p == nil || p.Session == "" {
				ok, _, err = kv.Acquire(pair, wo)
			}
		}
		if err == nil && !ok {
			e.rec.unfinished(start)
			return nil
		}
		if err == nil {
			e.rec.hold(start, time.Now())
			ok, _, err = kv.Release(pair, wo)
			if err == nil && !ok {
				return fmt.Errorf("release of %s refused", e.key)
			}
		}
		if err != nil {
			if stop, err := e.retry(ctx, err); stop {
				return err
			}
			continue
		}
		e.rec.cycle(start, time.Now())
	}
	return nil
}

// runLoadRow runs c's clients for warmUp+measure and measures the cycles
// and requests that end inside the measured window. Each client has its own
// session, created through its own server with the server's defaults (bound
// to serfHealth; lock-delay 15s, which never arms since every hold ends in
// a release), and its own transport; clients go round-robin over the
// servers, followers first.
func runLoadRow(cl *benchProcs, c benchCase, round int, warmUp, measure time.Duration) (rowResult, error) {
	start := time.Now()
	from, to := start.Add(warmUp), start.Add(warmUp+measure)
	// A bound for requests in flight when the window closes.
	ctx, cancel := context.WithDeadline(context.Background(), to.Add(30*time.Second))
	defer cancel()
	use := make(chan windowUse, 1)
	go func() { use <- cl.useOver(from, to) }()
	recs := make([]*clientRec, c.row.clients)
	errs := make([]error, c.row.clients)
	var wg sync.WaitGroup
	for i := range c.row.clients {
		rec := &clientRec{from: from, to: to}
		recs[i] = rec
		addr := cl.https[i%len(cl.https)]
		hc := &http.Client{Transport: &recordingTransport{rec: rec, base: &http.Transport{
			MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}}
		ac, err := api.NewClient(&api.Config{Address: addr, HttpClient: hc})
		if err != nil {
			return rowResult{}, fmt.Errorf("client: %w", err)
		}
		sid, _, err := ac.Session().Create(&api.SessionEntry{Name: "bench"}, nil)
		if err != nil {
			return rowResult{}, fmt.Errorf("session via server %d: %w", i%3+1, err)
		}
		defer func() { _, _ = ac.Session().Destroy(sid, nil) }()
		key := fmt.Sprintf("bench/r%d/%s/%s/%d", round, c.row.id, c.kind.id, i)
		if c.row.contended {
			key = fmt.Sprintf("bench/r%d/%s/%s/one", round, c.row.id, c.kind.id)
		}
		e := &loadEnv{addr: addr, key: key, sid: sid, http: hc, api: ac, to: to, rec: rec}
		wg.Go(func() { errs[i] = c.kind.run(ctx, e) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rowResult{}, err
	}
	res := summarizeClients(recs, measure)
	used := <-use
	if n := res.rate * measure.Seconds(); used.cpu > 0 && n > 0 {
		res.cpuPerCycle = time.Duration(float64(used.cpu) / n)
	}
	res.steal = used.steal
	return res, nil
}

// summarizeClients folds the clients' records into the row's figures.
func summarizeClients(recs []*clientRec, measure time.Duration) rowResult {
	var cycles, reqs, waits []time.Duration
	var starts []time.Time
	res := rowResult{fewest: -1}
	for _, r := range recs {
		r.mu.Lock()
		cycles, reqs, waits = append(cycles, r.cycles...), append(reqs, r.requests...), append(waits, r.waits...)
		starts = append(starts, r.starts...)
		res.errors += r.errors
		res.cycles, res.refused, res.reads = res.cycles+r.allCycles, res.refused+r.refused, res.reads+r.reads
		if res.fewest < 0 || r.held < res.fewest {
			res.fewest = r.held
		}
		res.most = max(res.most, r.held)
		res.perClient = append(res.perClient, r.held)
		res.longestWait = max(res.longestWait, r.longest)
		res.slowWaits += r.slow
		r.mu.Unlock()
	}
	res.fewest = max(res.fewest, 0)
	res.rate = float64(len(cycles)) / measure.Seconds()
	res.p50, res.p99 = percentile(cycles, 0.5), percentile(cycles, 0.99)
	res.reqP50, res.reqP99 = percentile(reqs, 0.5), percentile(reqs, 0.99)
	res.waitP99 = percentile(waits, 0.99)
	res.slowRequests, res.slowInWindow = slowByPhase(starts, reqs)
	return res
}
