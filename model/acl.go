package model

import (
	"maps"
	"slices"
	"strings"
)

// The replicated ACL tables (S87): tokens, policies, roles and the index of
// the bootstrap. Deciding a request from them is package acl's, which reads
// them through the accessors in aclreads.go; here they are only stored,
// written by ACLOp and checked for what depends on the state (links that
// must exist, names and IDs that must be unique, builtins that may not
// change). What can be checked without the state (UUID syntax, name syntax,
// whether rules parse) is checked before the command is proposed.

// Builtin IDs, which Consul reserves and creates itself.
const (
	// GlobalManagementPolicyID is the builtin policy that grants everything.
	GlobalManagementPolicyID = "00000000-0000-0000-0000-000000000001"
	// GlobalReadOnlyPolicyID is the builtin policy that reads everything.
	GlobalReadOnlyPolicyID = "00000000-0000-0000-0000-000000000002"
	// AnonymousTokenID is the anonymous token's AccessorID.
	AnonymousTokenID = "00000000-0000-0000-0000-000000000002"
)

// Bounds on the ACL tables (S39): every one is state a client can grow.
const (
	MaxACLTokens   = 1 << 16
	MaxACLPolicies = 1 << 13
	MaxACLRoles    = 1 << 13
	// MaxACLLinks bounds each list of a token or role: policies, roles,
	// service identities, node identities; and a policy's datacenters.
	MaxACLLinks = 64
	// MaxACLRulesLen bounds a policy's rules text; package acl parses
	// the same bound.
	MaxACLRulesLen = 64 << 10
	// MaxACLText bounds names, descriptions and IDs.
	MaxACLText = 4 << 10
)

// ACLToken is a token as stored. Its links are IDs; names are read from
// the linked policy or role, so a rename shows at once.
type ACLToken struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []string             `json:",omitempty"`
	Roles             []string             `json:",omitempty"`
	ServiceIdentities []ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []ACLNodeIdentity    `json:",omitempty"`
	Local             bool
	// CreateTime is Unix nanoseconds, chosen by the leader before raft.
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLServiceIdentity grants what a service needs to register itself.
type ACLServiceIdentity struct {
	ServiceName string
	Datacenters []string `json:",omitempty"`
}

// ACLNodeIdentity grants what a node needs to register itself.
type ACLNodeIdentity struct {
	NodeName   string
	Datacenter string
}

// ACLPolicy is a named rules text.
type ACLPolicy struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLRole is a named set of policies and identities a token may link.
type ACLRole struct {
	ID                string
	Name              string
	Description       string
	Policies          []string             `json:",omitempty"`
	ServiceIdentities []ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []ACLNodeIdentity    `json:",omitempty"`
	CreateIndex       uint64
	ModifyIndex       uint64
}

// ACLVerb names an ACL write.
type ACLVerb string

// ACL writes.
const (
	// ACLBootstrap writes the first management token, once (or again after
	// a reset with the matching index).
	ACLBootstrap    ACLVerb = "bootstrap"
	ACLTokenSet     ACLVerb = "token-set"
	ACLTokenDelete  ACLVerb = "token-delete"
	ACLPolicySet    ACLVerb = "policy-set"
	ACLPolicyDelete ACLVerb = "policy-delete"
	ACLRoleSet      ACLVerb = "role-set"
	ACLRoleDelete   ACLVerb = "role-delete"
)

// ACLOp is one ACL write, as Consul's ACL RPCs apply them. IDs, secrets and
// CreateTime are chosen by the leader before raft (as session IDs are, S1);
// indexes in the records are ignored.
type ACLOp struct {
	Verb ACLVerb
	// Create says a set makes a new record, whose ID (and a token's secret)
	// must be unused; otherwise the record must exist.
	Create bool       `json:",omitempty"`
	Token  *ACLToken  `json:",omitempty"`
	Policy *ACLPolicy `json:",omitempty"`
	Role   *ACLRole   `json:",omitempty"`
	// ID names what a delete removes (an AccessorID, a policy or role ID).
	ID string `json:",omitempty"`
	// ResetIndex, on a bootstrap after the first, must equal the index of
	// the last bootstrap: the operator read it from the refusal.
	ResetIndex uint64 `json:",omitempty"`
}

// aclOp applies op.
func (a *applier) aclOp(op ACLOp) {
	var err *Error
	switch op.Verb {
	case ACLBootstrap:
		err = a.aclBootstrap(op)
	case ACLTokenSet:
		err = a.aclTokenSet(op)
	case ACLTokenDelete:
		err = a.aclTokenDelete(op.ID)
	case ACLPolicySet:
		err = a.aclPolicySet(op)
	case ACLPolicyDelete:
		err = a.aclPolicyDelete(op.ID)
	case ACLRoleSet:
		err = a.aclRoleSet(op)
	case ACLRoleDelete:
		err = a.aclRoleDelete(op.ID)
	default:
		err = errorf(ErrInvalid, "unknown ACL operation %q", op.Verb)
	}
	if err != nil {
		a.fail(err)
	}
}

// aclBootstrap writes the bootstrap token if no bootstrap happened yet, or
// if ResetIndex names the last one (S87). It records its own index, which
// the next reset must name.
func (a *applier) aclBootstrap(op ACLOp) *Error {
	s := a.s
	if s.aclBootstrapIndex != 0 {
		if op.ResetIndex == 0 {
			return errorf(ErrConflict, "ACL bootstrap no longer allowed (reset index: %d)", s.aclBootstrapIndex)
		}
		if op.ResetIndex != s.aclBootstrapIndex {
			return errorf(ErrConflict, "Invalid bootstrap reset index (specified %d, reset index: %d)", op.ResetIndex, s.aclBootstrapIndex)
		}
	}
	if op.Token == nil {
		return errorf(ErrInvalid, "bootstrap without a token")
	}
	if err := a.aclTokenSet(ACLOp{Verb: ACLTokenSet, Create: true, Token: op.Token}); err != nil {
		return err
	}
	s.aclBootstrapIndex = a.idx
	return nil
}

func (a *applier) aclTokenSet(op ACLOp) *Error {
	if op.Token == nil {
		return errorf(ErrInvalid, "token write without a token")
	}
	s := a.s
	t := *op.Token
	if err := checkACLText(t.AccessorID, t.SecretID, t.Description); err != nil {
		return err
	}
	if t.AccessorID == "" {
		return errorf(ErrInvalid, "Invalid Token: AccessorID is missing")
	}
	prev, exists := s.aclTokens[t.AccessorID]
	if op.Create {
		switch {
		case t.SecretID == "":
			return errorf(ErrInvalid, "Invalid Token: SecretID is missing")
		case exists || s.aclSecrets[t.AccessorID] != "":
			return errorf(ErrConflict, "Invalid Token: AccessorID is already in use")
		case s.aclSecrets[t.SecretID] != "" || s.aclTokens[t.SecretID].AccessorID != "":
			return errorf(ErrConflict, "Invalid Token: SecretID is already in use")
		case len(s.aclTokens) >= MaxACLTokens:
			return errorf(ErrTooLarge, "Too many ACL tokens: the limit is %d", MaxACLTokens)
		}
	} else {
		switch {
		case !exists:
			return errorf(ErrMissing, "Cannot find token %q", t.AccessorID)
		case t.SecretID == "":
			t.SecretID = prev.SecretID
		case t.SecretID != prev.SecretID:
			return errorf(ErrConflict, "Changing a token's SecretID is not permitted")
		}
		if t.Local != prev.Local {
			return errorf(ErrConflict, "Cannot toggle local mode of %s", t.AccessorID)
		}
		t.CreateTime = prev.CreateTime
	}
	var err *Error
	if t.Policies, err = aclLinks(t.Policies, s.aclPolicies, "policy"); err != nil {
		return err
	}
	if t.Roles, err = aclLinks(t.Roles, s.aclRoles, "role"); err != nil {
		return err
	}
	if t.ServiceIdentities, t.NodeIdentities, err = aclIdentities(t.ServiceIdentities, t.NodeIdentities); err != nil {
		return err
	}
	a.res.ACLID = t.AccessorID
	t.CreateIndex, t.ModifyIndex = a.idx, a.idx
	if exists {
		t.CreateIndex, t.ModifyIndex = prev.CreateIndex, prev.ModifyIndex
		if aclTokenEqual(prev, t) {
			return nil // nothing changes, so nothing moves (S37's rule)
		}
		t.ModifyIndex = a.idx
	}
	s.aclTokens[t.AccessorID] = t
	s.aclSecrets[t.SecretID] = t.AccessorID
	s.tables.ACLTokens = a.idx
	return nil
}

// aclLinks checks that every linked ID exists and drops repeats, keeping
// the first; names were resolved to IDs before the command.
func aclLinks[V any](ids []string, table map[string]V, what string) ([]string, *Error) {
	if len(ids) > MaxACLLinks {
		return nil, errorf(ErrTooLarge, "Too many %s links: the limit is %d", what, MaxACLLinks)
	}
	var out []string
	for _, id := range ids {
		if _, ok := table[id]; !ok {
			return nil, errorf(ErrMissing, "No such ACL %s with ID %q", what, id)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// aclIdentities checks identity lists' bounds and drops repeats.
func aclIdentities(svc []ACLServiceIdentity, nodes []ACLNodeIdentity) ([]ACLServiceIdentity, []ACLNodeIdentity, *Error) {
	if len(svc) > MaxACLLinks || len(nodes) > MaxACLLinks {
		return nil, nil, errorf(ErrTooLarge, "Too many identities: the limit is %d of each kind", MaxACLLinks)
	}
	var outS []ACLServiceIdentity
	for _, id := range svc {
		if id.ServiceName == "" {
			return nil, nil, errorf(ErrInvalid, "Service identity is missing the service name field on this token")
		}
		if len(id.Datacenters) > MaxACLLinks {
			return nil, nil, errorf(ErrTooLarge, "Too many datacenters: the limit is %d", MaxACLLinks)
		}
		if !slices.ContainsFunc(outS, func(o ACLServiceIdentity) bool { return o.ServiceName == id.ServiceName }) {
			outS = append(outS, ACLServiceIdentity{ServiceName: id.ServiceName, Datacenters: slices.Clone(id.Datacenters)})
		}
	}
	var outN []ACLNodeIdentity
	for _, id := range nodes {
		if id.NodeName == "" {
			return nil, nil, errorf(ErrInvalid, "Node identity is missing the node name field on this token")
		}
		if id.Datacenter == "" {
			return nil, nil, errorf(ErrInvalid, "Node identity is missing the datacenter field on this token")
		}
		if !slices.Contains(outN, id) {
			outN = append(outN, id)
		}
	}
	return outS, outN, nil
}

func (a *applier) aclTokenDelete(id string) *Error {
	s := a.s
	if id == AnonymousTokenID {
		return errorf(ErrInvalid, "Delete operation not permitted on the anonymous token")
	}
	t, ok := s.aclTokens[id]
	if !ok {
		return errorf(ErrMissing, "Cannot find token to delete")
	}
	delete(s.aclTokens, id)
	delete(s.aclSecrets, t.SecretID)
	s.tables.ACLTokens = a.idx
	a.res.ACLID = id
	return nil
}

// isBuiltinPolicy reports whether id is one Consul creates itself.
func isBuiltinPolicy(id string) bool {
	return id == GlobalManagementPolicyID || id == GlobalReadOnlyPolicyID
}

func (a *applier) aclPolicySet(op ACLOp) *Error {
	if op.Policy == nil {
		return errorf(ErrInvalid, "policy write without a policy")
	}
	s := a.s
	p := *op.Policy
	p.Datacenters = slices.Clone(p.Datacenters)
	if err := checkACLText(p.ID, p.Name, p.Description); err != nil {
		return err
	}
	switch {
	case p.ID == "":
		return errorf(ErrInvalid, "Invalid Policy: no ID is set")
	case p.Name == "":
		return errorf(ErrInvalid, "Invalid Policy: no Name is set")
	case len(p.Rules) > MaxACLRulesLen:
		return errorf(ErrTooLarge, "Invalid Policy: %d bytes of rules exceed the limit of %d", len(p.Rules), MaxACLRulesLen)
	case len(p.Datacenters) > MaxACLLinks:
		return errorf(ErrTooLarge, "Too many datacenters: the limit is %d", MaxACLLinks)
	}
	prev, exists := s.aclPolicies[p.ID]
	named, nameTaken := s.ACLPolicyByName(p.Name)
	if op.Create {
		switch {
		case exists:
			return errorf(ErrConflict, "Invalid Policy: ID %q is already in use", p.ID)
		case nameTaken:
			return errorf(ErrConflict, "Invalid Policy: A Policy with Name %q already exists", p.Name)
		case len(s.aclPolicies) >= MaxACLPolicies:
			return errorf(ErrTooLarge, "Too many ACL policies: the limit is %d", MaxACLPolicies)
		}
	} else {
		switch {
		case !exists:
			return errorf(ErrMissing, "cannot find policy %s", p.ID)
		case nameTaken && named.ID != p.ID:
			return errorf(ErrConflict, "Invalid Policy: A policy with name %q already exists", p.Name)
		case isBuiltinPolicy(p.ID) && len(p.Datacenters) > 0:
			return errorf(ErrConflict, "Changing the Datacenters of the %s policy is not permitted", prev.Name)
		case isBuiltinPolicy(p.ID) && p.Rules != prev.Rules:
			return errorf(ErrConflict, "Changing the Rules for the builtin %s policy is not permitted", prev.Name)
		}
	}
	a.res.ACLID = p.ID
	p.CreateIndex, p.ModifyIndex = a.idx, a.idx
	if exists {
		p.CreateIndex, p.ModifyIndex = prev.CreateIndex, prev.ModifyIndex
		if aclPolicyEqual(prev, p) {
			return nil
		}
		p.ModifyIndex = a.idx
	}
	s.aclPolicies[p.ID] = p
	s.tables.ACLPolicies = a.idx
	return nil
}

// aclPolicyDelete removes a policy. Tokens and roles that link it keep the
// link, which reads and resolution skip, as in Consul.
func (a *applier) aclPolicyDelete(id string) *Error {
	s := a.s
	p, ok := s.aclPolicies[id]
	switch {
	case !ok:
		return errorf(ErrMissing, "Cannot find policy to delete")
	case isBuiltinPolicy(id):
		return errorf(ErrInvalid, "Delete operation not permitted on the builtin %s policy", p.Name)
	}
	delete(s.aclPolicies, id)
	s.tables.ACLPolicies = a.idx
	a.res.ACLID = id
	return nil
}

func (a *applier) aclRoleSet(op ACLOp) *Error {
	if op.Role == nil {
		return errorf(ErrInvalid, "role write without a role")
	}
	s := a.s
	r := *op.Role
	if err := checkACLText(r.ID, r.Name, r.Description); err != nil {
		return err
	}
	switch {
	case r.ID == "":
		return errorf(ErrInvalid, "Invalid Role: no ID is set")
	case r.Name == "":
		return errorf(ErrInvalid, "Invalid Role: no Name is set")
	}
	prev, exists := s.aclRoles[r.ID]
	named, nameTaken := s.ACLRoleByName(r.Name)
	if op.Create {
		switch {
		case exists:
			return errorf(ErrConflict, "Invalid Role: ID %q is already in use", r.ID)
		case nameTaken:
			return errorf(ErrConflict, "Invalid Role: A Role with Name %q already exists", r.Name)
		case len(s.aclRoles) >= MaxACLRoles:
			return errorf(ErrTooLarge, "Too many ACL roles: the limit is %d", MaxACLRoles)
		}
	} else {
		switch {
		case !exists:
			return errorf(ErrMissing, "cannot find role %s", r.ID)
		case nameTaken && named.ID != r.ID:
			return errorf(ErrConflict, "Invalid Role: A role with name %q already exists", r.Name)
		}
	}
	var err *Error
	if r.Policies, err = aclLinks(r.Policies, s.aclPolicies, "policy"); err != nil {
		return err
	}
	if r.ServiceIdentities, r.NodeIdentities, err = aclIdentities(r.ServiceIdentities, r.NodeIdentities); err != nil {
		return err
	}
	a.res.ACLID = r.ID
	r.CreateIndex, r.ModifyIndex = a.idx, a.idx
	if exists {
		r.CreateIndex, r.ModifyIndex = prev.CreateIndex, prev.ModifyIndex
		if aclRoleEqual(prev, r) {
			return nil
		}
		r.ModifyIndex = a.idx
	}
	s.aclRoles[r.ID] = r
	s.tables.ACLRoles = a.idx
	return nil
}

func (a *applier) aclRoleDelete(id string) *Error {
	s := a.s
	if _, ok := s.aclRoles[id]; !ok {
		return errorf(ErrMissing, "Cannot find role to delete")
	}
	delete(s.aclRoles, id)
	s.tables.ACLRoles = a.idx
	a.res.ACLID = id
	return nil
}

// checkACLText bounds the free-text fields of a record (S39).
func checkACLText(fields ...string) *Error {
	for _, f := range fields {
		if len(f) > MaxACLText {
			return errorf(ErrTooLarge, "ACL field of %d bytes exceeds the limit of %d", len(f), MaxACLText)
		}
	}
	return nil
}

func aclTokenEqual(a, b ACLToken) bool {
	return a.AccessorID == b.AccessorID && a.SecretID == b.SecretID && a.Description == b.Description &&
		slices.Equal(a.Policies, b.Policies) && slices.Equal(a.Roles, b.Roles) &&
		slices.EqualFunc(a.ServiceIdentities, b.ServiceIdentities, serviceIdentityEqual) &&
		slices.Equal(a.NodeIdentities, b.NodeIdentities) && a.Local == b.Local &&
		a.CreateTime == b.CreateTime && a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

func serviceIdentityEqual(a, b ACLServiceIdentity) bool {
	return a.ServiceName == b.ServiceName && slices.Equal(a.Datacenters, b.Datacenters)
}

func aclPolicyEqual(a, b ACLPolicy) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Description == b.Description && a.Rules == b.Rules &&
		slices.Equal(a.Datacenters, b.Datacenters) && a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

func aclRoleEqual(a, b ACLRole) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Description == b.Description &&
		slices.Equal(a.Policies, b.Policies) &&
		slices.EqualFunc(a.ServiceIdentities, b.ServiceIdentities, serviceIdentityEqual) &&
		slices.Equal(a.NodeIdentities, b.NodeIdentities) && a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

// lowerName is the key names are compared under: Consul's ACL name indexes
// ignore case.
func lowerName(name string) string { return strings.ToLower(name) }

// CheckACL reports how Apply would refuse op on s now, or nil; it changes
// nothing. A server asks before it proposes, so a write refused for what
// the state holds (a name in use, a missing record, a spent bootstrap)
// costs no log entry. IDs a leader fills in later (the empty ID, accessor
// or secret of a create) count as fresh.
func (s *State) CheckACL(op ACLOp) *Error {
	dry := &State{
		aclTokens: maps.Clone(s.aclTokens), aclSecrets: maps.Clone(s.aclSecrets),
		aclPolicies: maps.Clone(s.aclPolicies), aclRoles: maps.Clone(s.aclRoles),
		aclBootstrapIndex: s.aclBootstrapIndex, tables: s.tables,
	}
	// Placeholders no stored ID can equal: stored IDs never hold a NUL.
	if op.Token != nil && (op.Create || op.Verb == ACLBootstrap) {
		t := *op.Token
		if t.AccessorID == "" {
			t.AccessorID = "\x00accessor"
		}
		if t.SecretID == "" {
			t.SecretID = "\x00secret"
		}
		op.Token = &t
	}
	if op.Policy != nil && op.Create && op.Policy.ID == "" {
		p := *op.Policy
		p.ID = "\x00policy"
		op.Policy = &p
	}
	if op.Role != nil && op.Create && op.Role.ID == "" {
		r := *op.Role
		r.ID = "\x00role"
		op.Role = &r
	}
	res := Result{}
	a := &applier{s: dry, idx: s.Index() + 1, res: &res}
	a.aclOp(op)
	return res.Err
}
