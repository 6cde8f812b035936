package conformance

import (
	"context"
	"testing"

	"github.com/hashicorp/go-uuid"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestRegistrationTokenMutantIsCaught: S86's registration case fails
// against a tenure whose anti-entropy writes every registration as the
// anonymous token, as tenure did before a registration kept its token;
// TestConformanceACL runs it against the real one, and it passes against
// Consul 1.22.7 (CONSUL.md §24).
func TestRegistrationTokenMutantIsCaught(t *testing.T) {
	t.Parallel()
	if *flagAddr != "" {
		t.Skip("runs against an in-process server with ACLs on")
	}
	token, err := uuid.GenerateUUID()
	if err != nil {
		t.Fatal(err)
	}
	a := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.ACL = agent.ACLConfig{Enabled: true, DefaultPolicy: "deny", Tokens: map[string]string{"initial_management": token}}
		c.Local.Sync.RegisterToken = func(string, bool) string { return "anonymous" }
	})
	rep := Run(context.Background(), Options{Addr: "http://" + a.HTTPAddr(), Token: token, Profile: ACLTenure,
		Filter: `^S86/agent-registration-written-with-its-token$`})
	if rep.Failed == 0 {
		t.Fatalf("the mutant survived (%d passed, %d skipped)", rep.Passed, rep.Skipped)
	}
	for _, c := range rep.Cases {
		if c.Outcome == Fail {
			t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
		}
	}
}
