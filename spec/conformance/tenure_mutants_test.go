package conformance

import (
	"context"
	"testing"
)

// requireTenureMutantsCaught runs the cases of filter against a tenure
// server through an identity proxy, which must pass, and then through each
// of ms, each of which must fail at least one of them. Tenure clauses need
// this apart from TestMutantsAreCaught, whose mutants run against any
// server (-addr may be a real Consul); here a non-tenure server skips.
func requireTenureMutantsCaught(t *testing.T, filter string, ms ...mutant) {
	t.Helper()
	base, profile, _ := serverUnderTest(t)
	if profile != string(Tenure) {
		t.Skipf("needs a tenure server (profile %s)", profile)
	}
	if rep := Run(context.Background(), Options{Addr: proxyFor(t, base, mutant{name: "identity"}), Profile: Tenure, Filter: filter}); !rep.OK() || rep.Passed == 0 {
		t.Fatalf("cases %s fail through the identity proxy: %+v", filter, rep)
	}
	for _, m := range ms {
		t.Run(m.name, func(t *testing.T) {
			rep := Run(context.Background(), Options{Addr: proxyFor(t, base, m), Profile: Tenure, Filter: filter})
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
