package conformance

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
)

// The S89 cases belong to the consul profile, which tenure's own run
// skips; this test runs them against the server under test under the
// consul profile, and then through mutants, each of which must fail at
// least one of them.
func TestCoordinateCasesCatchBrokenServers(t *testing.T) {
	t.Parallel()
	base, _, _ := serverUnderTest(t)
	run := func(addr string) Report {
		return Run(context.Background(), Options{Addr: addr, Token: *flagToken, Profile: Consul, Filter: `^S89/`})
	}
	want := 0
	for _, c := range coordinateCases() {
		if !c.acl {
			want++
		}
	}
	if rep := run(proxyFor(t, base, mutant{name: "identity"})); !rep.OK() || rep.Passed != want {
		var b strings.Builder
		_ = rep.WriteTable(&b) // writes to a strings.Builder cannot fail
		t.Fatalf("the S89 cases fail through the identity proxy:\n%s", b.String())
	}
	for _, m := range []mutant{
		// A server that ignores ?near.
		{name: "near-ignored", prepare: func(x *exchange) {
			q := x.r.URL.Query()
			q.Del("near")
			x.r.URL.RawQuery = q.Encode()
		}},
		// A server that takes the connection's address for the caller's,
		// not the first X-Forwarded-For entry.
		{name: "forwarded-for-ignored", prepare: func(x *exchange) {
			x.r.Header.Del("X-Forwarded-For")
		}},
		// A server whose node read answers at once, ?index or not.
		{name: "node-read-never-blocks", prepare: func(x *exchange) {
			if strings.HasPrefix(x.r.URL.Path, "/v1/coordinate/node/") {
				q := x.r.URL.Query()
				q.Del("index")
				q.Del("wait")
				x.r.URL.RawQuery = q.Encode()
			}
		}},
		// A server that answers an update without storing it.
		{name: "update-swallowed", handle: func(_ *mstate, x *exchange) (bool, error) {
			if x.r.URL.Path != "/v1/coordinate/update" || x.r.Method != http.MethodPut {
				return false, nil
			}
			x.code, x.header, x.body = http.StatusOK, http.Header{}, nil
			return true, nil
		}},
		// A server that takes a vector of any size (the proxy pads a short
		// one to eight dimensions, so the server stores it).
		{name: "any-dimension-accepted", prepare: func(x *exchange) {
			if x.r.URL.Path == "/v1/coordinate/update" {
				x.body = bytes.Replace(x.body, []byte(`"Vec":[0,0]`), []byte(`"Vec":[0,0,0,0,0,0,0,0]`), 1)
			}
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			rep := run(proxyFor(t, base, m))
			if rep.Failed == 0 {
				t.Fatalf("mutant %s survived the S89 cases (%d passed)", m.name, rep.Passed)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}
