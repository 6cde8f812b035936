package conformance

import (
	"context"
	"net/http"
	"testing"
)

// The request-limits case (a tenure case, so outside the contract-profile
// mutants) is caught by a server that takes over-long keys: here a proxy
// that answers such a PUT with success instead of 413.
func TestRequestLimitsCaseCatchesLimitlessServer(t *testing.T) {
	t.Parallel()
	base, profile, _ := serverUnderTest(t)
	if profile != string(Tenure) {
		t.Skipf("needs a tenure server (profile %s)", profile)
	}
	m := mutant{name: "key-limit-ignored", handle: func(_ *mstate, x *exchange) (bool, error) {
		if !isKVPut(x) || len(kvKey(x)) <= 8<<10 {
			return false, nil
		}
		x.code, x.header, x.out = http.StatusOK, http.Header{}, []byte("true")
		return true, nil
	}}
	const filter = `^S39/request-limits`
	if rep := Run(context.Background(), Options{Addr: proxyFor(t, base, mutant{name: "identity"}), Profile: Tenure, Filter: filter}); !rep.OK() || rep.Passed != 1 {
		t.Fatalf("case fails through the identity proxy: %+v", rep)
	}
	rep := Run(context.Background(), Options{Addr: proxyFor(t, base, m), Profile: Tenure, Filter: filter})
	if rep.Failed == 0 {
		t.Fatalf("mutant %s survived %s", m.name, filter)
	}
	for _, c := range rep.Cases {
		if c.Outcome == Fail {
			t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
		}
	}
}
