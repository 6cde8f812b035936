package model

import (
	"cmp"
	"slices"
)

// ACLToken returns a token by AccessorID.
func (s *State) ACLToken(accessorID string) (ACLToken, bool) {
	t, ok := s.aclTokens[accessorID]
	return t, ok
}

// ACLTokenBySecret returns the token whose SecretID is secret.
func (s *State) ACLTokenBySecret(secret string) (ACLToken, bool) {
	id, ok := s.aclSecrets[secret]
	if !ok {
		return ACLToken{}, false
	}
	return s.aclTokens[id], true
}

// ACLTokenList returns every token, ordered by SecretID as Consul lists
// them.
func (s *State) ACLTokenList() []ACLToken {
	out := make([]ACLToken, 0, len(s.aclTokens))
	for _, secret := range sortedKeys(s.aclSecrets) {
		out = append(out, s.aclTokens[s.aclSecrets[secret]])
	}
	return out
}

// ACLPolicy returns a policy by ID.
func (s *State) ACLPolicy(id string) (ACLPolicy, bool) {
	p, ok := s.aclPolicies[id]
	return p, ok
}

// ACLPolicyByName returns the policy named name, ignoring case as Consul's
// name index does.
func (s *State) ACLPolicyByName(name string) (ACLPolicy, bool) {
	want := lowerName(name)
	for _, id := range sortedKeys(s.aclPolicies) {
		if p := s.aclPolicies[id]; lowerName(p.Name) == want {
			return p, true
		}
	}
	return ACLPolicy{}, false
}

// ACLPolicyList returns every policy, ordered by name ignoring case, as
// Consul lists them.
func (s *State) ACLPolicyList() []ACLPolicy {
	out := make([]ACLPolicy, 0, len(s.aclPolicies))
	for _, p := range s.aclPolicies {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b ACLPolicy) int {
		return cmp.Or(cmp.Compare(lowerName(a.Name), lowerName(b.Name)), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// ACLRole returns a role by ID.
func (s *State) ACLRole(id string) (ACLRole, bool) {
	r, ok := s.aclRoles[id]
	return r, ok
}

// ACLRoleByName returns the role named name, ignoring case.
func (s *State) ACLRoleByName(name string) (ACLRole, bool) {
	want := lowerName(name)
	for _, id := range sortedKeys(s.aclRoles) {
		if r := s.aclRoles[id]; lowerName(r.Name) == want {
			return r, true
		}
	}
	return ACLRole{}, false
}

// ACLRoleList returns every role, ordered by name ignoring case.
func (s *State) ACLRoleList() []ACLRole {
	out := make([]ACLRole, 0, len(s.aclRoles))
	for _, r := range s.aclRoles {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ACLRole) int {
		return cmp.Or(cmp.Compare(lowerName(a.Name), lowerName(b.Name)), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// ACLBootstrapIndex is the index of the last ACL bootstrap, 0 if there has
// been none: a bootstrap is then allowed, and after one only with this
// index as the reset index (S87).
func (s *State) ACLBootstrapIndex() uint64 { return s.aclBootstrapIndex }
