package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// allCases is every row run by every kind of client.
func allCases(t *testing.T) []benchCase {
	t.Helper()
	cases, err := pickCases("", "spin,lock,kv")
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestPickCases: every row with the default kinds, a subset in the
// tables' order whatever order it is named in, and unknown names refused.
func TestPickCases(t *testing.T) {
	all, err := pickCases("", "")
	if err != nil || len(all) != 2*len(benchRows) {
		t.Fatalf("default cases: %d, %v; want %d", len(all), err, 2*len(benchRows))
	}
	for _, c := range all {
		if c.kind.id != "spin" && c.kind.id != "lock" {
			t.Errorf("default cases include %s", c.kind.id)
		}
	}
	some, err := pickCases("64one, 8one", "lock,spin")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range some {
		keys = append(keys, c.key())
	}
	if got := strings.Join(keys, " "); got != "8one/spin 8one/lock 64one/spin 64one/lock" {
		t.Errorf("cases = %s", got)
	}
	for _, bad := range [][2]string{{"8", ""}, {"", "spinning"}, {"1,", ""}} {
		if _, err := pickCases(bad[0], bad[1]); err == nil {
			t.Errorf("pickCases(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// TestSummarize: only what ends inside the window counts, a wait the
// window's end cut is the longest, and the spread is per client.
func TestSummarize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	from, to := at(100), at(1100)
	a, b := &clientRec{from: from, to: to}, &clientRec{from: from, to: to}
	// a: one cycle in the warm-up, three in the window.
	for _, start := range []int{50, 200, 400, 600} {
		a.request(at(start), at(start+10), true)
		a.request(at(start+10), at(start+20), false)
		a.hold(at(start), at(start+20))
		a.request(at(start+20), at(start+30), false)
		a.cycle(at(start), at(start+30))
	}
	// b: one cycle whose wait took 500ms, then a wait the window cut.
	b.hold(at(150), at(650))
	b.cycle(at(150), at(660))
	b.unfinished(at(300))
	b.read()
	res := summarizeClients([]*clientRec{a, b}, time.Second)
	if res.rate != 4 || res.fewest != 1 || res.most != 3 || res.cycles != 5 || res.refused != 4 || res.reads != 1 {
		t.Errorf("summary %+v: want 4 cycles/s, 1–3 acquires per client, 5 cycles, 4 refused, 1 read", res)
	}
	if res.longestWait != 800*time.Millisecond || res.slowWaits != 0 {
		t.Errorf("longest wait %v, %d of a second or more; want the cut one, 800ms, and none", res.longestWait, res.slowWaits)
	}
	c := &clientRec{from: from, to: at(9000)}
	c.hold(at(200), at(1300))
	c.unfinished(at(7500))
	c.unfinished(at(8500))
	if got := summarizeClients([]*clientRec{c}, time.Second); got.slowWaits != 2 || got.longestWait != 1500*time.Millisecond {
		t.Errorf("slow waits %d, longest %v; want 2, 1500ms", got.slowWaits, got.longestWait)
	}
	if res.waitP99 != 500*time.Millisecond || res.p99 != 510*time.Millisecond || res.p50 != 30*time.Millisecond {
		t.Errorf("wait p99 %v, cycle p50 %v p99 %v; want 500ms, 30ms, 510ms", res.waitP99, res.p50, res.p99)
	}
	if res.reqP99 != 10*time.Millisecond || len(a.requests) != 9 {
		t.Errorf("request p99 %v over %d requests, want 10ms over 9", res.reqP99, len(a.requests))
	}
	if got := summarizeClients([]*clientRec{{from: from, to: to}}, time.Second); got.fewest != 0 || got.rate != 0 {
		t.Errorf("an idle client: %+v", got)
	}
}

// TestRecordingTransport: acquires and releases are timed, a false
// acquire is counted as refused, KV reads are counted, and the caller
// still reads each answer whole.
func TestRecordingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			fmt.Fprint(w, "[]")
		case strings.Contains(r.URL.RawQuery, "acquire=held"):
			fmt.Fprint(w, "false")
		default:
			fmt.Fprint(w, "true")
		}
	}))
	defer srv.Close()
	now := time.Now()
	rec := &clientRec{from: now.Add(-time.Hour), to: now.Add(time.Hour)}
	hc := &http.Client{Transport: &recordingTransport{base: http.DefaultTransport, rec: rec}}
	e := &loadEnv{http: hc, rec: rec}
	ctx := context.Background()
	for _, c := range []struct {
		path string
		want bool
	}{{"/v1/kv/k?acquire=free", true}, {"/v1/kv/k?acquire=held", false}, {"/v1/kv/k?release=s", true}} {
		if got, err := e.put(ctx, srv.URL+c.path); err != nil || got != c.want {
			t.Errorf("PUT %s: %v, %v; want %v", c.path, got, err, c.want)
		}
	}
	for _, path := range []string{"/v1/kv/k?index=3", "/v1/status/leader"} {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "[]" {
			t.Errorf("GET %s answered %q", path, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1/kv/k", strings.NewReader("v"))
	if resp, err := hc.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if len(rec.requests) != 3 || rec.refused != 1 || rec.reads != 1 {
		t.Errorf("recorded %d requests, %d refused, %d reads; want 3, 1, 1", len(rec.requests), rec.refused, rec.reads)
	}
}

// TestAtMost: the verdict names each p99 above the baseline's.
func TestAtMost(t *testing.T) {
	base := caseStats{p99: 20 * time.Millisecond, reqP99: 10 * time.Millisecond}
	for _, c := range []struct {
		other caseStats
		want  string
	}{
		{caseStats{p99: 20 * time.Millisecond, reqP99: 9 * time.Millisecond}, "yes"},
		{caseStats{p99: 21 * time.Millisecond, reqP99: 9 * time.Millisecond}, "no: cycle"},
		{caseStats{p99: 5 * time.Millisecond, reqP99: 44 * time.Millisecond}, "no: request"},
		{caseStats{p99: 45 * time.Millisecond, reqP99: 44 * time.Millisecond}, "no: cycle, request"},
	} {
		if got := atMost(base, c.other); got != c.want {
			t.Errorf("atMost(%+v) = %q, want %q", c.other, got, c.want)
		}
	}
}

// TestReportColumns: one line per case with both p99 columns, the wait
// and the spread over clients, side by side, and the verdict.
func TestReportColumns(t *testing.T) {
	cases, err := pickCases("8one", "spin,lock")
	if err != nil {
		t.Fatal(err)
	}
	r := newBenchResults(cases)
	for i, c := range cases {
		for _, ms := range []int{1, 2, 3} {
			d := time.Duration(ms) * time.Millisecond
			r.addRow("Consul", c, rowResult{rate: 100, p50: d, p99: 20 * d, reqP99: 10 * d, waitP99: 15 * d,
				longestWait: 30 * d, fewest: 10 * ms, most: 20 * ms, cycles: 10, refused: 50, reads: 90})
			r.addRow("tenure", c, rowResult{rate: 300, p50: d, p99: 10 * d, reqP99: time.Duration(10*i+5) * d,
				waitP99: 5 * d, longestWait: 6 * d, fewest: 30 * ms, most: 31 * ms, cycles: 10, refused: 1, reads: 2})
		}
	}
	got := r.format([]benchSystem{{name: "Consul"}, {name: "tenure"}}, "header", time.Millisecond, time.Millisecond, time.Millisecond)
	for _, want := range []string{
		"| 8 clients, one key | spin (plain HTTP) | 100 (100–100)   | 300 (300–300)   | 3.00×               | 2.00ms / 2.00ms | 40.00ms / 20.00ms | 20.00ms / 10.00ms | 30.00ms / 10.00ms | 90.00ms / 18.00ms | 20–40 / 60–62       | yes                    |",
		"| 8 clients, one key | consul/api Lock   |",
		"| no: request            |",
		"two figures in a cell are Consul / tenure",
		"8 clients, one key, spin, per cycle: Consul 5.00 refused acquires and 9.00 reads; tenure 0.10 refused acquires and 0.20 reads",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "lock hand-off") {
		t.Errorf("a run without hand-offs reports them:\n%s", got)
	}
}
