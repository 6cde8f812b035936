package model_test

import (
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
