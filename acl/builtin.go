package acl

import (
	"fmt"

	"github.com/tenurekv/tenure/model"
)

// The builtin records Consul creates when ACLs are enabled (S87).
const (
	GlobalManagementName        = "global-management"
	GlobalManagementDescription = "A built-in policy that grants read and write access to all Consul features"
	GlobalReadOnlyName          = "builtin/global-read-only"
	GlobalReadOnlyDescription   = "A built-in policy that grants read-only access to all Consul features"
	AnonymousDescription        = "Anonymous Token"
	// BootstrapDescription is the token PUT /v1/acl/bootstrap makes;
	// InitialManagementDescription the one acl.tokens.initial_management
	// makes.
	BootstrapDescription         = "Bootstrap Token (Global Management)"
	InitialManagementDescription = "Initial Management Token"
)

// globalRules is the rules text of both builtin policies with level
// substituted, as Consul stores and shows it.
func globalRules(level string) string {
	return fmt.Sprintf(`
acl = "%[1]s"
agent_prefix "" {
	policy = "%[1]s"
}
event_prefix "" {
	policy = "%[1]s"
}
key_prefix "" {
	policy = "%[1]s"
}
keyring = "%[1]s"
node_prefix "" {
	policy = "%[1]s"
}
operator = "%[1]s"
mesh = "%[1]s"
peering = "%[1]s"
query_prefix "" {
	policy = "%[1]s"
}
service_prefix "" {
	policy = "%[1]s"
	intentions = "%[1]s"
}
session_prefix "" {
	policy = "%[1]s"
}`, level)
}

// BuiltinPolicies are the policies a leader creates (or restores to their
// rules) when ACLs are enabled, in the order it writes them.
func BuiltinPolicies() []model.ACLPolicy {
	return []model.ACLPolicy{
		{ID: model.GlobalManagementPolicyID, Name: GlobalManagementName, Description: GlobalManagementDescription, Rules: globalRules(policyWrite)},
		{ID: model.GlobalReadOnlyPolicyID, Name: GlobalReadOnlyName, Description: GlobalReadOnlyDescription, Rules: globalRules(policyRead)},
	}
}

// serviceIdentityRules is what a service identity grants: its service and
// sidecar proxy written, every service and node read.
func serviceIdentityRules(name string) *Rules {
	return &Rules{
		Services:        []*Rule{{Name: name, Policy: policyWrite}, {Name: name + "-sidecar-proxy", Policy: policyWrite}},
		ServicePrefixes: []*Rule{{Name: "", Policy: policyRead}},
		NodePrefixes:    []*Rule{{Name: "", Policy: policyRead}},
	}
}

// nodeIdentityRules is what a node identity grants: its node written,
// every service read.
func nodeIdentityRules(name string) *Rules {
	return &Rules{
		Nodes:           []*Rule{{Name: name, Policy: policyWrite}},
		ServicePrefixes: []*Rule{{Name: "", Policy: policyRead}},
	}
}

// agentRecoveryRules is what the agent's recovery token grants on that
// agent: write on the agent, read on every node.
func agentRecoveryRules(node string) *Rules {
	return &Rules{
		Agents:       []*Rule{{Name: node, Policy: policyWrite}},
		NodePrefixes: []*Rule{{Name: "", Policy: policyRead}},
	}
}
