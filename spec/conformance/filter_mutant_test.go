package conformance

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The S66 cases belong to the consul profile, which tenure's own run of
// the suite (profile tenure) skips; this test runs them against the
// server under test (the in-process tenure agent, or -addr) under the
// consul profile, and then through mutants, each of which must fail at
// least one of them.
func TestFilterCasesCatchBrokenFilters(t *testing.T) {
	t.Parallel()
	base, _, _ := serverUnderTest(t)
	run := func(addr string) Report {
		return Run(context.Background(), Options{Addr: addr, Token: *flagToken, Profile: Consul, Filter: `^S66/`})
	}
	if rep := run(proxyFor(t, base, mutant{name: "identity"})); !rep.OK() || rep.Passed != len(filterCases())-1 {
		var b strings.Builder
		_ = rep.WriteTable(&b) // writes to a strings.Builder cannot fail
		t.Fatalf("the S66 cases fail through the identity proxy:\n%s", b.String())
	}
	for _, m := range []mutant{
		// A server that ignores ?filter answers everything and refuses nothing.
		{name: "filter-ignored", prepare: func(x *exchange) {
			q := x.r.URL.Query()
			q.Del("filter")
			x.r.URL.RawQuery = q.Encode()
		}},
		// A server whose filtered reads answer another index than the read's.
		{name: "filtered-index-lowered", handle: func(_ *mstate, x *exchange) (bool, error) {
			if err := x.forward(); err != nil {
				return true, err
			}
			if n, err := strconv.ParseUint(x.header.Get("X-Consul-Index"), 10, 64); err == nil && x.q.Has("filter") && n > 1 {
				x.header.Set("X-Consul-Index", strconv.FormatUint(n-1, 10))
			}
			return true, nil
		}},
		// A server whose blocking reads with a filter wake only when what
		// the filter keeps changes.
		{name: "filtered-read-waits-for-its-entries", handle: waitForFilteredChange},
	} {
		t.Run(m.name, func(t *testing.T) {
			rep := run(proxyFor(t, base, m))
			if rep.Failed == 0 {
				t.Fatalf("mutant %s survived the S66 cases (%d passed)", m.name, rep.Passed)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}

// waitForFilteredChange re-issues a blocking read that carries a filter
// until its answer differs from the unblocked one or its wait is over.
func waitForFilteredChange(_ *mstate, x *exchange) (bool, error) {
	if x.r.Method != http.MethodGet || !x.q.Has("filter") || !x.q.Has("index") {
		return false, nil
	}
	wait, err := time.ParseDuration(x.q.Get("wait"))
	if err != nil {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	q := x.r.URL.Query()
	q.Del("index")
	q.Del("wait")
	_, _, first, err := x.u.fwd(x.r.Context(), x.r.Method, x.r.URL.Path+"?"+q.Encode(), x.r.Header, nil)
	if err != nil {
		return true, err
	}
	index := x.q.Get("index")
	for {
		q.Set("index", index)
		q.Set("wait", time.Until(deadline).Round(time.Millisecond).String())
		x.code, x.header, x.out, err = x.u.fwd(x.r.Context(), x.r.Method, x.r.URL.Path+"?"+q.Encode(), x.r.Header, nil)
		if err != nil || x.code != http.StatusOK || string(x.out) != string(first) || time.Until(deadline) < 100*time.Millisecond {
			return true, err
		}
		index = x.header.Get("X-Consul-Index")
	}
}
