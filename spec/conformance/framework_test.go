package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Framework tests: no Consul-API server. Runs whose cases need a server get
// a loopback stub that answers every request 404 (enough for the preflight);
// the synthetic cases never send requests.

func stub(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// synthetic cases on clauses of each status: S1 contract, S9 consul, S8 tenure.
func synthetic() []Case {
	return []Case{
		{clause: "S1", name: "passes", run: func(t *caseT) { t.Check(true, "never") }},
		{clause: "S1", name: "fails", run: func(t *caseT) { t.Errorf("first"); t.Errorf("second") }},
		{clause: "S9", name: "consul-only", run: func(t *caseT) {}},
		{clause: "S8", name: "tenure-only", run: func(t *caseT) {}},
		{clause: "S21", name: "unobservable", unobservable: "needs a leader change"},
		{clause: "S14", name: "slow", slow: true, run: func(t *caseT) {}},
	}
}

func byID(rep Report) map[string]CaseResult {
	m := map[string]CaseResult{}
	for _, c := range rep.Cases {
		m[c.ID] = c
	}
	return m
}

func TestProfileSelection(t *testing.T) {
	addr := stub(t)
	for _, tc := range []struct {
		profile Status
		want    map[string]Outcome
	}{
		{Contract, map[string]Outcome{"S1/passes": Pass, "S1/fails": Fail, "S9/consul-only": Skip, "S8/tenure-only": Skip, "S21/unobservable": Skip, "S14/slow": Pass}},
		{Consul, map[string]Outcome{"S1/passes": Pass, "S1/fails": Fail, "S9/consul-only": Pass, "S8/tenure-only": Skip, "S21/unobservable": Skip, "S14/slow": Pass}},
		{Tenure, map[string]Outcome{"S1/passes": Pass, "S1/fails": Fail, "S9/consul-only": Skip, "S8/tenure-only": Pass, "S21/unobservable": Skip, "S14/slow": Pass}},
	} {
		rep := Run(context.Background(), Options{Addr: addr, Profile: tc.profile, cases: synthetic()})
		got := map[string]Outcome{}
		for id, c := range byID(rep) {
			got[id] = c.Outcome
		}
		if !equalMaps(got, tc.want) {
			t.Errorf("profile %s: outcomes %v, want %v", tc.profile, got, tc.want)
		}
	}
}

func equalMaps(a, b map[string]Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestSkipReasons(t *testing.T) {
	rep := Run(context.Background(), Options{Addr: stub(t), Profile: Consul, SkipSlow: true, cases: append(synthetic(),
		Case{clause: "S99", name: "unknown-clause", run: func(*caseT) {}},
		Case{clause: "S1", name: "no-body"})})
	m := byID(rep)
	for id, want := range map[string]string{
		"S8/tenure-only":     "clause S8 is tenure; profile consul runs contract+consul clauses",
		"S21/unobservable":   "not observable over HTTP: needs a leader change",
		"S14/slow":           "slow case",
		"S99/unknown-clause": "clause S99 is not in the clause index",
		"S1/no-body":         "case has no body",
	} {
		c := m[id]
		if c.Outcome != Skip || !strings.Contains(c.Reason, want) {
			t.Errorf("%s: got %s %q, want SKIP with %q", id, c.Outcome, c.Reason, want)
		}
	}
	rep = Run(context.Background(), Options{Addr: stub(t), Profile: Contract, cases: synthetic()})
	if c := byID(rep)["S9/consul-only"]; !strings.Contains(c.Reason, "profile contract runs contract clauses only") {
		t.Errorf("contract-profile skip reason %q", c.Reason)
	}
}

// TestAgentCasesNeedABinary: a case that starts agents is skipped, with
// the reason, unless Options.Agent names a binary; with one it runs.
func TestAgentCasesNeedABinary(t *testing.T) {
	var ran atomic.Int32
	cases := []Case{{clause: "S53", name: "agents", agents: true, run: func(*caseT) { ran.Add(1) }}}
	c := byID(Run(context.Background(), Options{Addr: stub(t), cases: cases}))["S53/agents"]
	if c.Outcome != Skip || !strings.Contains(c.Reason, "needs an agent binary") || ran.Load() != 0 {
		t.Errorf("without -agent: got %s %q (ran %d times), want SKIP naming the agent binary", c.Outcome, c.Reason, ran.Load())
	}
	c = byID(Run(context.Background(), Options{Addr: stub(t), Agent: "/bin/true", cases: cases}))["S53/agents"]
	if c.Outcome != Pass || ran.Load() != 1 {
		t.Errorf("with -agent: got %s %q (ran %d times), want PASS, run once", c.Outcome, c.Reason, ran.Load())
	}
}

func TestCaseOutcomes(t *testing.T) {
	var cleaned atomic.Int32
	cases := []Case{
		{clause: "S1", name: "fatal", run: func(t *caseT) {
			t.Cleanup(func(context.Context) error { cleaned.Add(1); return nil })
			t.Fatalf("stop %d", 1)
			t.Errorf("not reached")
		}},
		{clause: "S1", name: "panic", run: func(t *caseT) {
			t.Cleanup(func(context.Context) error { cleaned.Add(1); return nil })
			panic("boom")
		}},
		{clause: "S1", name: "skipf", run: func(t *caseT) { t.Skipf("not today") }},
		{clause: "S1", name: "helper-goroutine-fatal", run: func(t *caseT) {
			t.Go(func() { t.Fatalf("in helper") })()
			t.Logf("case continues after a helper's Fatalf")
		}},
		{clause: "S1", name: "timeout", run: func(t *caseT) { t.Sleep(time.Hour) }},
		{clause: "S1", name: "equal", run: func(t *caseT) {
			t.Equal("number", 1, 2)
			t.Equal("same", "a", "a")
			t.Require(t.Failed(), "Failed() false after a failed Equal")
		}},
	}
	rep := Run(context.Background(), Options{Addr: stub(t), cases: cases, Timeout: 200 * time.Millisecond})
	m := byID(rep)
	for id, want := range map[string]struct {
		o      Outcome
		reason string
	}{
		"S1/fatal":                  {Fail, "stop 1"},
		"S1/panic":                  {Fail, "panic: boom"},
		"S1/skipf":                  {Skip, "not today"},
		"S1/helper-goroutine-fatal": {Fail, "in helper"},
		"S1/timeout":                {Fail, "case deadline reached"},
		"S1/equal":                  {Fail, "number: got 1, want 2"},
	} {
		c := m[id]
		if c.Outcome != want.o || !strings.Contains(c.Reason, want.reason) {
			t.Errorf("%s: got %s %q, want %s with %q", id, c.Outcome, c.Reason, want.o, want.reason)
		}
	}
	if m["S1/fatal"].Reason != "stop 1" {
		t.Errorf("Fatalf did not stop the case: %q", m["S1/fatal"].Reason)
	}
	if n := cleaned.Load(); n != 2 {
		t.Errorf("cleanups after Fatalf and panic ran %d times, want 2", n)
	}
	if rep.OK() || rep.ExitCode() != 1 || rep.Failed != 5 || rep.Skipped != 1 || rep.Passed != 0 {
		t.Errorf("counts: ok=%v exit=%d pass=%d fail=%d skip=%d", rep.OK(), rep.ExitCode(), rep.Passed, rep.Failed, rep.Skipped)
	}
}

func TestParallelBound(t *testing.T) {
	var running, peak atomic.Int32
	var cases []Case
	for i := 0; i < 12; i++ {
		cases = append(cases, Case{clause: "S1", name: string(rune('a' + i)), run: func(t *caseT) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			t.Sleep(5 * time.Millisecond)
			running.Add(-1)
		}})
	}
	rep := Run(context.Background(), Options{Addr: stub(t), Parallel: 3, cases: cases})
	if rep.Passed != 12 {
		t.Fatalf("passed %d of 12", rep.Passed)
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("%d cases ran at once with Parallel 3", p)
	}
}

func TestFilterAndRunErrors(t *testing.T) {
	rep := Run(context.Background(), Options{Addr: stub(t), Filter: "^S1/pass", cases: synthetic()})
	if len(rep.Cases) != 1 || rep.Cases[0].ID != "S1/passes" {
		t.Errorf("filter ^S1/pass selected %+v", rep.Cases)
	}
	rep = Run(context.Background(), Options{Addr: stub(t), Filter: "(", cases: synthetic()})
	if rep.Error == "" || rep.OK() || len(rep.Cases) != 0 {
		t.Errorf("bad filter: error %q, %d cases", rep.Error, len(rep.Cases))
	}
	rep = Run(context.Background(), Options{Addr: stub(t), Profile: "strict", cases: synthetic()})
	if !strings.Contains(rep.Error, `unknown profile "strict"`) || rep.OK() {
		t.Errorf("bad profile: error %q", rep.Error)
	}
	// Nothing listens on a closed stub: runnable cases fail, and say why.
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	rep = Run(context.Background(), Options{Addr: dead, cases: synthetic()})
	if !strings.Contains(rep.Error, "cannot reach server") || rep.OK() {
		t.Errorf("unreachable server: error %q", rep.Error)
	}
	if c := byID(rep)["S1/passes"]; c.Outcome != Fail || !strings.Contains(c.Reason, "not run") {
		t.Errorf("case against an unreachable server: %s %q", c.Outcome, c.Reason)
	}
	// A run whose cases are all skipped needs no server at all.
	rep = Run(context.Background(), Options{Addr: dead, Filter: "S8/|S21/", cases: synthetic()})
	if !rep.OK() || rep.Skipped != 2 {
		t.Errorf("all-skip run against no server: ok=%v skipped=%d error=%q", rep.OK(), rep.Skipped, rep.Error)
	}
}

func TestSummarize(t *testing.T) {
	got := summarize([]CaseResult{
		{Clause: "S10", Name: "a", Outcome: Pass, Duration: time.Second},
		{Clause: "S10", Name: "b", Outcome: Fail, Reason: "broke", Duration: 2 * time.Second},
		{Clause: "S10", Name: "c", Outcome: Pass},
		{Clause: "S2", Name: "a", Outcome: Skip, Reason: "why"},
		{Clause: "S2", Name: "b", Outcome: Pass},
		{Clause: "S3", Name: "a", Outcome: Skip, Reason: "first"},
		{Clause: "S3", Name: "b", Outcome: Skip, Reason: "second"},
	})
	want := []struct {
		id     string
		o      Outcome
		reason string
		cases  int
	}{{"S2", Pass, "", 2}, {"S3", Skip, "first", 2}, {"S10", Fail, "b: broke", 3}}
	if len(got) != len(want) {
		t.Fatalf("got %d rows: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.id || g.Outcome != w.o || g.Reason != w.reason || g.Cases != w.cases {
			t.Errorf("row %d: got %+v, want %+v", i, g, w)
		}
	}
	if got[2].Duration != 2*time.Second {
		t.Errorf("S10 duration %v, want the longest case, 2s", got[2].Duration)
	}
}

func TestRendering(t *testing.T) {
	rep := Run(context.Background(), Options{Addr: stub(t), Profile: Consul, cases: synthetic()})
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	out := tab.String()
	for _, re := range []string{
		`(?m)^CLAUSE\s+STATUS\s+RESULT\s+CASES\s+TIME\s+REASON$`,
		`(?m)^S1\s+contract\s+FAIL\s+2\s+\d+\.\d\ds\s+fails: first; second$`,
		`(?m)^S8\s+tenure\s+SKIP\s+1\s+0\.00s\s+clause S8 is tenure`,
		`(?m)^S9\s+consul\s+PASS\s+1\s`,
		`(?m)^FAIL S1/fails \(`,
		`(?m)^FAILED: profile consul against http://127\.0\.0\.1:\d+: 5 clauses; cases 3 pass, 1 fail, 2 skip; `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("table lacks %s:\n%s", re, out)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Profile string
		Failed  int
		Clauses []struct{ ID, Outcome, Reason string }
		Cases   []struct {
			ID, Outcome, Reason string
			Seconds             float64
		}
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not decode: %v\n%s", err, js.String())
	}
	if back.Profile != "consul" || back.Failed != 1 || len(back.Clauses) != 5 || len(back.Cases) != 6 {
		t.Errorf("JSON report: %+v", back)
	}
	if back.Clauses[0].ID != "S1" || back.Clauses[0].Outcome != "FAIL" || back.Clauses[0].Reason != "fails: first; second" {
		t.Errorf("JSON first clause: %+v", back.Clauses[0])
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\n  b\tc", 80); got != "a b c" {
		t.Errorf("oneLine squeezes to %q", got)
	}
	if got := oneLine(strings.Repeat("x", 50), 10); got != "xxxxxxx..." {
		t.Errorf("oneLine truncates to %q", got)
	}
}

func withMainCases(t *testing.T, cs []Case) {
	old := mainCases
	mainCases = func() []Case { return cs }
	t.Cleanup(func() { mainCases = old })
}

func TestMainExitCodes(t *testing.T) {
	addr := stub(t)
	withMainCases(t, synthetic())
	for _, tc := range []struct {
		args []string
		code int
		out  string // regexp over stdout+stderr
	}{
		{[]string{"-addr", addr}, exitFail, `FAIL S1/fails`},
		{[]string{"-addr", addr, "-run", "^S1/passes$"}, exitOK, `ok: profile contract`},
		{[]string{"-addr", addr, "-profile", "tenure", "-run", "S8/"}, exitOK, `S8\s+tenure\s+PASS`},
		{[]string{"-addr", addr, "-json", "-run", "S1/fails"}, exitFail, `"outcome": "FAIL"`},
		{[]string{"-addr", addr, "-profile", "bogus"}, exitUsage, `unknown profile "bogus"`},
		{[]string{"-addr", addr, "-run", "("}, exitUsage, `bad -run regexp`},
		{[]string{"-addr", "ftp://127.0.0.1:8500"}, exitUsage, `want http://host:port`},
		{[]string{"-addr", strings.TrimPrefix(addr, "http://"), "-run", "^S1/passes$"}, exitOK, `ok: profile contract`},
		{[]string{"-addr", addr, "-parallel", "0"}, exitUsage, `-parallel must be at least 1`},
		{[]string{"-addr", addr, "extra"}, exitUsage, `unexpected arguments`},
		{[]string{"-nosuchflag"}, exitUsage, `flag provided but not defined`},
		{[]string{"-h"}, exitOK, `usage: tenure conform`},
		{[]string{"-list", "-profile", "consul"}, exitOK, `S8/tenure-only\s+tenure\s+skip: clause S8 is tenure`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(tc.args, &stdout, &stderr)
		all := stdout.String() + stderr.String()
		if code != tc.code || !regexp.MustCompile(tc.out).MatchString(all) {
			t.Errorf("Main(%q) = %d, want %d with %s; output:\n%s", tc.args, code, tc.code, tc.out, all)
		}
	}
}

// TestClausesMatchIndex keeps clauses in step with spec/SPEC.md.
func TestClausesMatchIndex(t *testing.T) {
	f, err := os.Open("../SPEC.md")
	if err != nil {
		t.Fatalf("open clause index: %v", err)
	}
	defer f.Close()
	parsed, err := parseClauseIndex(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := compareClauses(parsed, clauses); err != nil {
		t.Error(err)
	}
}

func TestCompareClausesCatchesDrift(t *testing.T) {
	idx := "### S1 · contract\n**Clause.** Create...\n### S2 · tenure\n**Clause.** Defaults...\n"
	parsed, err := parseClauseIndex(strings.NewReader(idx))
	if err != nil {
		t.Fatal(err)
	}
	ok := []clause{{"S1", Contract, ""}, {"S2", Tenure, ""}}
	if err := compareClauses(parsed, ok); err != nil {
		t.Errorf("matching tables reported as drift: %v", err)
	}
	for _, bad := range [][]clause{
		{{"S1", Contract, ""}},                                         // missing S2
		{{"S1", Contract, ""}, {"S2", Consul, ""}},                     // wrong status
		{{"S1", Contract, ""}, {"S2", Tenure, ""}, {"S3", Tenure, ""}}, // extra
	} {
		if err := compareClauses(parsed, bad); err == nil {
			t.Errorf("drift %+v not caught", bad)
		}
	}
	if _, err := parseClauseIndex(strings.NewReader("### S1 · strict\n")); err == nil {
		t.Error("unknown status in the index not rejected")
	}
}

func TestSuiteShape(t *testing.T) {
	seen := map[string]bool{}
	covered := map[string]bool{}
	slug := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	for _, c := range Suite() {
		if seen[c.ID()] {
			t.Errorf("duplicate case %s", c.ID())
		}
		seen[c.ID()] = true
		if c.status() == "" {
			t.Errorf("case %s names unknown clause %s", c.ID(), c.clause)
		}
		if !slug.MatchString(c.name) {
			t.Errorf("case %s: name is not a slug", c.ID())
		}
		if (c.run == nil) == (c.unobservable == "") {
			t.Errorf("case %s must have exactly one of run and unobservable", c.ID())
		}
		covered[c.clause] = true
	}
	for _, cl := range clauses {
		if !covered[cl.ID] {
			t.Errorf("clause %s has no case", cl.ID)
		}
	}
}

// parseClauseIndex reads the "### S<n> · <status>" clause headings of SPEC.md.
func parseClauseIndex(f io.Reader) ([]clause, error) {
	line := regexp.MustCompile(`^### (S\d+) · (\S+)`)
	var out []clause
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		st, err := parseStatus(m[2])
		if err != nil {
			return nil, err
		}
		out = append(out, clause{ID: m[1], Status: st})
	}
	return out, sc.Err()
}

func compareClauses(index, table []clause) error {
	want := map[string]Status{}
	for _, c := range index {
		want[c.ID] = c.Status
	}
	var probs []string
	have := map[string]bool{}
	for _, c := range table {
		have[c.ID] = true
		st, ok := want[c.ID]
		switch {
		case !ok:
			probs = append(probs, c.ID+" is not in the index")
		case st != c.Status:
			probs = append(probs, c.ID+" is "+string(st)+" in the index, "+string(c.Status)+" in the suite")
		}
	}
	for _, c := range index {
		if !have[c.ID] {
			probs = append(probs, c.ID+" is missing from the suite's table")
		}
	}
	if len(probs) > 0 {
		return &usageError{msg: "clause table drift: " + strings.Join(probs, "; ")}
	}
	return nil
}
