package model_test

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// aclState is a state with one record of each ACL kind and a bootstrap.
func aclState(t *testing.T) *model.State {
	t.Helper()
	s := model.New()
	cmds := []*model.ACLOp{
		{Verb: model.ACLPolicySet, Create: true, Policy: &model.ACLPolicy{ID: "p1", Name: "ops", Rules: `acl = "read"`, Datacenters: []string{"dc1"}}},
		{Verb: model.ACLRoleSet, Create: true, Role: &model.ACLRole{ID: "r1", Name: "role", Policies: []string{"p1"},
			ServiceIdentities: []model.ACLServiceIdentity{{ServiceName: "web"}}, NodeIdentities: []model.ACLNodeIdentity{{NodeName: "n1", Datacenter: "dc1"}}}},
		{Verb: model.ACLBootstrap, Token: &model.ACLToken{AccessorID: "a1", SecretID: "s1", Description: "boot",
			Policies: []string{"p1", "p1"}, Roles: []string{"r1"}, CreateTime: 42,
			ServiceIdentities: []model.ACLServiceIdentity{{ServiceName: "db", Datacenters: []string{"dc1"}}}}},
	}
	for i, op := range cmds {
		if res := s.Apply(uint64(i+1), model.Command{ACL: op}); res.Err != nil {
			t.Fatalf("op %d: %v", i, res.Err)
		}
	}
	return s
}

// TestACLTablesSurviveSnapshotAndHashEveryField: the ACL tables are part of
// a snapshot (restored equal, secrets index rebuilt), and Hash and Equal see
// every field of every record (S87).
func TestACLTablesSurviveSnapshotAndHashEveryField(t *testing.T) {
	s := aclState(t)
	back, err := model.Restore(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) || back.Hash() != s.Hash() {
		t.Fatal("restored ACL state differs")
	}
	if tok, ok := back.ACLTokenBySecret("s1"); !ok || tok.AccessorID != "a1" || len(tok.Policies) != 1 {
		t.Fatalf("secret index after restore: %+v %v", tok, ok)
	}
	if back.ACLBootstrapIndex() != 3 {
		t.Fatalf("bootstrap index %d after restore", back.ACLBootstrapIndex())
	}
	edits := map[string]func(sn *model.Snapshot){
		"token description": func(sn *model.Snapshot) { tok := sn.ACLTokens["a1"]; tok.Description = "x"; sn.ACLTokens["a1"] = tok },
		"token roles":       func(sn *model.Snapshot) { tok := sn.ACLTokens["a1"]; tok.Roles = nil; sn.ACLTokens["a1"] = tok },
		"token time":        func(sn *model.Snapshot) { tok := sn.ACLTokens["a1"]; tok.CreateTime = 1; sn.ACLTokens["a1"] = tok },
		"token local":       func(sn *model.Snapshot) { tok := sn.ACLTokens["a1"]; tok.Local = true; sn.ACLTokens["a1"] = tok },
		"token identity dc": func(sn *model.Snapshot) {
			tok := sn.ACLTokens["a1"]
			tok.ServiceIdentities = []model.ACLServiceIdentity{{ServiceName: "db", Datacenters: []string{"dc2"}}}
			sn.ACLTokens["a1"] = tok
		},
		"policy rules": func(sn *model.Snapshot) { p := sn.ACLPolicies["p1"]; p.Rules = ""; sn.ACLPolicies["p1"] = p },
		"policy dcs":   func(sn *model.Snapshot) { p := sn.ACLPolicies["p1"]; p.Datacenters = nil; sn.ACLPolicies["p1"] = p },
		"role nodes": func(sn *model.Snapshot) {
			r := sn.ACLRoles["r1"]
			r.NodeIdentities = []model.ACLNodeIdentity{{NodeName: "n1", Datacenter: "dc2"}}
			sn.ACLRoles["r1"] = r
		},
		"bootstrap index": func(sn *model.Snapshot) { sn.ACLBootstrapIndex = 1 },
		"tables":          func(sn *model.Snapshot) { sn.Tables.ACLRoles = 3 },
	}
	for name, edit := range edits {
		sn := s.Snapshot()
		edit(&sn)
		other := model.RestoreUnchecked(sn)
		if other.Equal(s) {
			t.Errorf("%s: Equal missed the change", name)
		}
		if other.Hash() == s.Hash() {
			t.Errorf("%s: Hash missed the change", name)
		}
	}
}

// TestACLInvariantsCatchBrokenTables: the ACL invariants fail on states
// built broken on purpose, and Restore refuses them.
func TestACLInvariantsCatchBrokenTables(t *testing.T) {
	cases := map[string]struct {
		edit func(sn *model.Snapshot)
		want string
	}{
		"secret shared": {func(sn *model.Snapshot) {
			tok := sn.ACLTokens["a1"]
			tok.AccessorID = "a2"
			sn.ACLTokens["a2"] = tok
		}, model.InvACLSecretIndex},
		"names clash": {func(sn *model.Snapshot) {
			p := sn.ACLPolicies["p1"]
			p.ID, p.Name = "p2", "OPS"
			sn.ACLPolicies["p2"] = p
		}, model.InvACLNameUnique},
		"index above table": {func(sn *model.Snapshot) {
			r := sn.ACLRoles["r1"]
			r.ModifyIndex = 99
			sn.ACLRoles["r1"] = r
		}, model.InvIndexBounds},
		"bootstrap above table": {func(sn *model.Snapshot) { sn.ACLBootstrapIndex = 99 }, model.InvIndexBounds},
	}
	for name, c := range cases {
		sn := aclState(t).Snapshot()
		c.edit(&sn)
		err := model.RestoreUnchecked(sn).CheckInvariants()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: invariants said %v, want %s", name, err, c.want)
		}
		if _, err := model.Restore(sn); err == nil {
			t.Errorf("%s: Restore accepted it", name)
		}
	}
	sn := aclState(t).Snapshot()
	tok := sn.ACLTokens["a1"]
	sn.ACLTokens["elsewhere"] = tok
	if _, err := model.Restore(sn); err == nil || !strings.Contains(err.Error(), "stored under") {
		t.Errorf("token under another key: %v", err)
	}
}

// TestACLWritesRefuseAndChangeNothing: each refused ACL write leaves the
// state as it was (S88), and a write that changes nothing moves no index.
func TestACLWritesRefuseAndChangeNothing(t *testing.T) {
	refused := []*model.ACLOp{
		{Verb: model.ACLTokenSet, Create: true, Token: &model.ACLToken{AccessorID: "a2", SecretID: "s2", Policies: []string{"gone"}}},
		{Verb: model.ACLTokenSet, Create: true, Token: &model.ACLToken{AccessorID: "s1", SecretID: "s3"}},
		{Verb: model.ACLTokenSet, Token: &model.ACLToken{AccessorID: "a1", SecretID: "s1", Local: true}},
		{Verb: model.ACLTokenSet, Create: true, Token: &model.ACLToken{AccessorID: "a3", SecretID: "s3", Description: strings.Repeat("x", model.MaxACLText+1)}},
		{Verb: model.ACLTokenSet, Create: true, Token: &model.ACLToken{AccessorID: "a3", SecretID: "s3", Policies: make([]string, model.MaxACLLinks+1)}},
		{Verb: model.ACLPolicySet, Create: true, Policy: &model.ACLPolicy{ID: "p9", Name: "x", Rules: strings.Repeat(" ", model.MaxACLRulesLen+1)}},
		{Verb: model.ACLPolicySet, Policy: &model.ACLPolicy{ID: "p9", Name: "x"}},
		{Verb: model.ACLRoleSet, Create: true, Role: &model.ACLRole{ID: "r2", Name: "ROLE"}},
		{Verb: model.ACLRoleDelete, ID: "r9"},
		{Verb: model.ACLBootstrap, Token: &model.ACLToken{AccessorID: "a4", SecretID: "s4"}},
		{Verb: "bogus"},
		{Verb: model.ACLTokenSet},
	}
	for i, op := range refused {
		s := aclState(t)
		before := s.Clone()
		res := s.Apply(100, model.Command{ACL: op})
		if res.Err == nil {
			t.Errorf("op %d (%s) accepted", i, op.Verb)
			continue
		}
		if err := model.CheckTransition(before, s, res); err != nil {
			t.Errorf("op %d: %v", i, err)
		}
	}
	s := aclState(t)
	tok, _ := s.ACLToken("a1")
	res := s.Apply(100, model.Command{ACL: &model.ACLOp{Verb: model.ACLTokenSet, Token: &tok}})
	if after, _ := s.ACLToken("a1"); res.Err != nil || after.ModifyIndex != tok.ModifyIndex || s.Tables().ACLTokens != 3 {
		t.Errorf("identical token write moved indexes: %v %+v", res.Err, after)
	}
	if res.ACLID != "a1" {
		t.Errorf("identical write names %q", res.ACLID)
	}
}
