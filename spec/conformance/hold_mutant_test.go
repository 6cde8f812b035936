package conformance

import (
	"context"
	"testing"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// The S65 cases are caught by agents that do not hold a create until their
// registration: tenure binaries built with a hold cut out (go build
// -overlay), a client agent's and a server agent's, each run as the cases'
// agent beside the in-process server. The same cases pass with the tenure
// binary as built (TestConformance).
func TestHeldCreateCasesCatchAgentsWithoutHold(t *testing.T) {
	t.Parallel()
	if testing.Short() || *flagAddr != "" {
		t.Skip("builds its own agents and runs them beside the in-process server; not with -short or -addr")
	}
	base, _, _ := serverUnderTest(t)
	for _, m := range []struct{ name, file, find, repl string }{
		{"client-agent-never-holds", "impl/internal/httpapi/clientregistered.go",
			"\tif a.registered.Load() {\n", "\tif !a.registered.Load() {\n"},
		{"server-agent-never-holds", "impl/agent/registeredgate.go",
			"\t\tif r.URL.Path == \"/v1/session/create\" {\n", "\t\tif false {\n"},
	} {
		t.Run(m.name, func(t *testing.T) {
			bin := proccluster.BuildTenureMutant(t, t.TempDir(), m.file, m.find, m.repl)
			rep := Run(context.Background(), Options{Addr: base, Profile: Tenure, Filter: `^S65/`, Agent: bin})
			if rep.Failed == 0 {
				t.Fatalf("mutant %s survived S65: %+v", m.name, rep)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}
