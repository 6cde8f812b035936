// Package acl is Consul's ACL model as pure functions: the policy rule
// language (HCL or JSON, parsed with hashicorp/hcl v1 as Consul parses it),
// the merge of several policies on one token, the authorizer that decides a
// request from the merged rules and the agent's default policy, the
// permission-denied texts, and the resolution of a token's secret to an
// authorizer over a model.State.
//
// It sits beside model rather than in it because parsing needs hcl and
// model is stdlib-only. Everything here is deterministic: a decision depends
// only on the rules text stored in the replicated state, the token's secret
// and the agent's configuration, never on time or randomness, so a server,
// the simulator and the linearizability checker that replay the same state
// see the same decisions. The replicated ACL tables themselves (tokens,
// policies, roles, the bootstrap index) are model's, applied through raft
// like every other write.
//
// A rules text that does not parse, or that names an access level Consul
// does not know, is refused with Consul's text when it is written; a stored
// one that no longer parses makes resolution fail, which denies the
// request: an error never allows anything (FuzzParse holds that).
//
// Clause IDs (S84…) refer to spec/SPEC.md.
package acl
