package model_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/tenurekv/tenure/model"
)

// Small ACL universes, so that links, names and secrets collide.
var (
	aclIDs     = []string{"a1", "a2", model.AnonymousTokenID, model.GlobalManagementPolicyID, ""}
	aclSecrets = []string{"s1", "s2", "a1", "anonymous", ""}
	aclNames   = []string{"ops", "OPS", "dev", ""}
	aclVerbs   = []model.ACLVerb{model.ACLBootstrap, model.ACLTokenSet, model.ACLTokenDelete,
		model.ACLPolicySet, model.ACLPolicyDelete, model.ACLRoleSet, model.ACLRoleDelete, "bogus"}
)

// genACLOp draws any ACL write, valid or not.
func genACLOp(t *rapid.T) *model.ACLOp {
	op := &model.ACLOp{
		Verb:       rapid.SampledFrom(aclVerbs).Draw(t, "aclverb"),
		Create:     rapid.Bool().Draw(t, "aclcreate"),
		ID:         rapid.SampledFrom(aclIDs).Draw(t, "aclid"),
		ResetIndex: rapid.Uint64Range(0, 20).Draw(t, "aclreset"),
	}
	links := func(label string) []string {
		return rapid.SliceOfN(rapid.SampledFrom(aclIDs), 0, 3).Draw(t, label)
	}
	switch op.Verb {
	case model.ACLBootstrap, model.ACLTokenSet:
		op.Token = &model.ACLToken{
			AccessorID: rapid.SampledFrom(aclIDs).Draw(t, "accessor"),
			SecretID:   rapid.SampledFrom(aclSecrets).Draw(t, "secret"),
			Policies:   links("tpolicies"),
			Roles:      links("troles"),
			Local:      rapid.Bool().Draw(t, "local"),
		}
		if rapid.Bool().Draw(t, "identity") {
			op.Token.ServiceIdentities = []model.ACLServiceIdentity{{ServiceName: rapid.SampledFrom([]string{"web", ""}).Draw(t, "svcid")}}
		}
	case model.ACLPolicySet:
		op.Policy = &model.ACLPolicy{
			ID:    rapid.SampledFrom(aclIDs).Draw(t, "pid"),
			Name:  rapid.SampledFrom(aclNames).Draw(t, "pname"),
			Rules: rapid.SampledFrom([]string{"", `acl = "read"`}).Draw(t, "rules"),
		}
	case model.ACLRoleSet:
		op.Role = &model.ACLRole{
			ID:       rapid.SampledFrom(aclIDs).Draw(t, "rid"),
			Name:     rapid.SampledFrom(aclNames).Draw(t, "rname"),
			Policies: links("rpolicies"),
		}
	}
	return op
}

// TestCheckACLMatchesApply: on any state reached by ACL writes, CheckACL
// refuses exactly what Apply refuses, with the same reason, and changes
// nothing: servers answer those refusals without a log entry.
func TestCheckACLMatchesApply(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := model.New()
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			op := genACLOp(t)
			before := s.Hash()
			check := s.CheckACL(*op)
			if s.Hash() != before {
				t.Fatalf("step %d: CheckACL changed the state", i)
			}
			// Apply sees what a leader proposes: a create's empty IDs
			// filled with fresh ones.
			res := s.Apply(uint64(i+1), model.Command{ACL: withFreshIDs(op, i)})
			switch {
			case (check == nil) != (res.Err == nil):
				t.Fatalf("step %d %+v: CheckACL %v, Apply %v", i, op, check, res.Err)
			case check != nil && check.Msg != res.Err.Msg:
				t.Fatalf("step %d: CheckACL %q, Apply %q", i, check.Msg, res.Err.Msg)
			}
		}
	})
}

// withFreshIDs fills the IDs a leader fills in (leader.Core.withACLIDs)
// with ones no record has.
func withFreshIDs(op *model.ACLOp, step int) *model.ACLOp {
	out := *op
	fresh := func(kind string) string { return fmt.Sprintf("fresh-%s-%d", kind, step) }
	if op.Token != nil && (op.Create || op.Verb == model.ACLBootstrap) {
		t := *op.Token
		if t.AccessorID == "" {
			t.AccessorID = fresh("accessor")
		}
		if t.SecretID == "" {
			t.SecretID = fresh("secret")
		}
		out.Token = &t
	}
	if op.Policy != nil && op.Create && op.Policy.ID == "" {
		p := *op.Policy
		p.ID = fresh("policy")
		out.Policy = &p
	}
	if op.Role != nil && op.Create && op.Role.ID == "" {
		r := *op.Role
		r.ID = fresh("role")
		out.Role = &r
	}
	return &out
}
