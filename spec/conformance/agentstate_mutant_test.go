package conformance

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// requireConsulMutantsCaught shows consul cases can fail: they pass
// through an identity proxy in front of the server under test (tenure's
// dev agent, which behaves as Consul here, or a real Consul with -addr and
// -profile consul), and each mutant makes at least one of them fail.
func requireConsulMutantsCaught(t *testing.T, filter string, ms ...mutant) {
	t.Helper()
	base, profile, _ := serverUnderTest(t)
	if *flagAddr != "" && profile != string(Consul) {
		t.Skipf("consul cases need -profile consul with -addr (profile %s)", profile)
	}
	if rep := Run(context.Background(), Options{Addr: proxyFor(t, base, mutant{name: "identity"}), Profile: Consul, Filter: filter}); !rep.OK() || rep.Passed == 0 {
		t.Fatalf("cases %s fail through the identity proxy: %+v", filter, rep)
	}
	for _, m := range ms {
		t.Run(m.name, func(t *testing.T) {
			rep := Run(context.Background(), Options{Addr: proxyFor(t, base, m), Profile: Consul, Filter: filter})
			if rep.Failed == 0 {
				t.Fatalf("mutant %s survived %s", m.name, filter)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}

func isCachedRead(x *exchange) bool {
	return x.r.Method == http.MethodGet && x.q.Has("cached")
}

// TestCachedCasesCatchBrokenCaches: an agent without a cache's headers,
// one whose entries never move after their first fetch, and one that
// takes ?cached with ?consistent are caught.
func TestCachedCasesCatchBrokenCaches(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	frozen := map[string]*exchange{}
	requireConsulMutantsCaught(t, `^S76/`,
		mutant{name: "cache-headers-dropped", handle: func(_ *mstate, x *exchange) (bool, error) {
			err := x.forward()
			if err == nil {
				x.header.Del("X-Cache")
				x.header.Del("Age")
			}
			return true, err
		}},
		mutant{name: "entries-never-refreshed", handle: func(_ *mstate, x *exchange) (bool, error) {
			if !isCachedRead(x) || !strings.HasPrefix(x.r.URL.Path, "/v1/catalog/service/") {
				return false, nil
			}
			mu.Lock()
			kept := frozen[x.r.URL.Path]
			mu.Unlock()
			if kept != nil {
				x.code, x.header, x.out = kept.code, kept.header.Clone(), kept.out
				x.header.Set("X-Cache", "HIT")
				x.header.Set("Age", "0")
				return true, nil
			}
			err := x.forward()
			if err == nil && x.code == http.StatusOK {
				mu.Lock()
				frozen[x.r.URL.Path] = x
				mu.Unlock()
			}
			return true, err
		}},
		mutant{name: "cached-consistent-accepted", prepare: func(x *exchange) {
			if isCachedRead(x) && x.q.Has("consistent") {
				x.q.Del("consistent")
				x.r.URL.RawQuery = x.q.Encode()
			}
		}},
	)
}

// TestContentHashCaseCatchesBrokenHashes: an agent that ignores ?hash, and
// one without X-Consul-ContentHash, are caught.
func TestContentHashCaseCatchesBrokenHashes(t *testing.T) {
	t.Parallel()
	agentService := func(x *exchange) bool {
		return x.r.Method == http.MethodGet && strings.HasPrefix(x.r.URL.Path, "/v1/agent/service/")
	}
	requireConsulMutantsCaught(t, `^S77/`,
		mutant{name: "hash-ignored", prepare: func(x *exchange) {
			if agentService(x) && x.q.Has("hash") {
				x.q.Del("hash")
				x.r.URL.RawQuery = x.q.Encode()
			}
		}},
		mutant{name: "hash-header-dropped", handle: func(_ *mstate, x *exchange) (bool, error) {
			err := x.forward()
			if err == nil && agentService(x) {
				x.header.Del("X-Consul-ContentHash")
			}
			return true, err
		}},
	)
}
