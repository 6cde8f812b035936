package acl

import (
	"errors"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestResolveAgentRecoveryToken: the agent's recovery token resolves on
// the agent without the tables, to write on that agent and read on nodes,
// denying the rest whatever the default policy; changing it at run time
// takes effect.
func TestResolveAgentRecoveryToken(t *testing.T) {
	recovery := "rec-secret"
	r := NewResolver(Config{Enabled: true, DefaultPolicy: "allow", NodeName: "n1",
		AgentRecovery: func() string { return recovery }})
	a, err := r.Resolve(model.New(), "rec-secret")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Allowed(ResourceAgent, "n1", AccessWrite) || a.Allowed(ResourceAgent, "n2", AccessWrite) ||
		!a.Allowed(ResourceNode, "n9", AccessRead) || a.Allowed(ResourceKey, "k", AccessRead) {
		t.Fatal("recovery token decides wrongly")
	}
	recovery = ""
	if _, err := r.Resolve(model.New(), "rec-secret"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("recovery token after it was cleared: %v", err)
	}
}
