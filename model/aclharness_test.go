package model_test

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// runACL runs the acl-* directives: writes to the ACL tables (S87), a dump
// of them, and decisions of package acl over the state (S84, S85). The
// decisions are the acl package's on the model's state, the pair a server
// runs.
func (h *harness) runACL(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "acl-state":
		return dumpACL(h.s), nil
	case "acl-authz":
		return h.authz(d)
	case "acl-builtins":
		var b strings.Builder
		for _, p := range acl.BuiltinPolicies() {
			out, err := h.apply(model.Command{ACL: &model.ACLOp{Verb: model.ACLPolicySet, Create: true, Policy: &p}})
			if err != nil {
				return "", err
			}
			b.WriteString(out)
		}
		return b.String(), nil
	}
	op := model.ACLOp{Create: d.HasArg("create"), ID: arg(d, "id"), ResetIndex: uintArg(d, "reset")}
	switch d.Cmd {
	case "acl-bootstrap":
		op.Verb = model.ACLBootstrap
		op.Token = aclTokenArg(d)
	case "acl-token-set":
		op.Verb, op.Token = model.ACLTokenSet, aclTokenArg(d)
	case "acl-token-delete":
		op.Verb = model.ACLTokenDelete
	case "acl-policy-set":
		op.Verb = model.ACLPolicySet
		op.Policy = &model.ACLPolicy{ID: arg(d, "id"), Name: arg(d, "name"), Description: arg(d, "desc"),
			Rules: d.Input, Datacenters: list(d, "dc")}
	case "acl-policy-delete":
		op.Verb = model.ACLPolicyDelete
	case "acl-role-set":
		op.Verb = model.ACLRoleSet
		op.Role = &model.ACLRole{ID: arg(d, "id"), Name: arg(d, "name"), Policies: list(d, "policies")}
		op.Role.ServiceIdentities, op.Role.NodeIdentities = identityArgs(d)
	case "acl-role-delete":
		op.Verb = model.ACLRoleDelete
	default:
		return "", fmt.Errorf("unknown directive %s", d.Cmd)
	}
	out, err := h.apply(model.Command{ACL: &op})
	if err != nil {
		return "", err
	}
	return out, nil
}

func aclTokenArg(d *datadriven.TestData) *model.ACLToken {
	t := &model.ACLToken{AccessorID: arg(d, "accessor"), SecretID: arg(d, "secret"), Description: arg(d, "desc"),
		Policies: list(d, "policies"), Roles: list(d, "roles"), Local: d.HasArg("local")}
	t.ServiceIdentities, t.NodeIdentities = identityArgs(d)
	return t
}

// identityArgs reads service=<name> and node=<name>:<dc>.
func identityArgs(d *datadriven.TestData) ([]model.ACLServiceIdentity, []model.ACLNodeIdentity) {
	var svc []model.ACLServiceIdentity
	for _, s := range list(d, "service") {
		svc = append(svc, model.ACLServiceIdentity{ServiceName: s})
	}
	var nodes []model.ACLNodeIdentity
	for _, n := range list(d, "node") {
		name, dc, _ := strings.Cut(n, ":")
		nodes = append(nodes, model.ACLNodeIdentity{NodeName: name, Datacenter: dc})
	}
	return svc, nodes
}

// authz resolves secret= on the state with default=allow|deny (and dc=, the
// agent's datacenter, default dc1) and decides each input line
// "<resource>:<access> <name>" ("key:write-prefix a/" for a recursive
// delete).
func (h *harness) authz(d *datadriven.TestData) (string, error) {
	cfg := acl.Config{Enabled: !d.HasArg("disabled"), DefaultPolicy: arg(d, "default"), Datacenter: "dc1"}
	if d.HasArg("dc") {
		cfg.Datacenter = arg(d, "dc")
	}
	a, err := acl.NewResolver(cfg).Resolve(h.s, arg(d, "secret"))
	if err != nil {
		return fmt.Sprintf("error: %v\n", err), nil
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		perm, name, _ := strings.Cut(strings.TrimSpace(line), " ")
		res, access, _ := strings.Cut(perm, ":")
		decision, err := a.Enforce(acl.Resource(res), name, access)
		if err != nil {
			fmt.Fprintf(&b, "%s: error: %v\n", line, err)
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", line, decision)
	}
	return b.String(), nil
}

func dumpACL(s *model.State) string {
	var b strings.Builder
	t := s.Snapshot().Tables
	fmt.Fprintf(&b, "acl tables tokens=%d policies=%d roles=%d bootstrap=%d\n", t.ACLTokens, t.ACLPolicies, t.ACLRoles, s.ACLBootstrapIndex())
	for _, p := range s.ACLPolicyList() {
		fmt.Fprintf(&b, "policy %s name=%s dcs=%v create=%d modify=%d\n", p.ID, p.Name, p.Datacenters, p.CreateIndex, p.ModifyIndex)
	}
	for _, r := range s.ACLRoleList() {
		fmt.Fprintf(&b, "role %s name=%s policies=%v services=%v nodes=%v create=%d modify=%d\n", r.ID, r.Name, r.Policies, r.ServiceIdentities, r.NodeIdentities, r.CreateIndex, r.ModifyIndex)
	}
	for _, tok := range s.ACLTokenList() {
		fmt.Fprintf(&b, "token %s secret=%s policies=%v roles=%v services=%v nodes=%v create=%d modify=%d\n", tok.AccessorID, tok.SecretID, tok.Policies, tok.Roles, tok.ServiceIdentities, tok.NodeIdentities, tok.CreateIndex, tok.ModifyIndex)
	}
	return b.String()
}
