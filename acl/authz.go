package acl

import (
	"strings"
)

// Authorizer decides requests for one token: its merged policies first, then
// the agent's default policy for anything they say nothing about (Consul's
// chain of a policy authorizer and a static one). The zero value denies
// everything.
type Authorizer struct {
	// AccessorID names the token in denials.
	AccessorID string
	policy     *policyAuthorizer // nil: no policies
	// fallback answers what the policies leave to the default.
	fallback fallback
}

// fallback is one of Consul's static authorizers.
type fallback int

const (
	denyAll   fallback = iota // default_policy "deny"
	allowAll                  // default_policy "allow": everything but ACL management
	manageAll                 // ACLs disabled: everything
)

func (f fallback) decide(r Resource) Decision {
	switch {
	case f == manageAll:
		return Allow
	case f == allowAll && r != ResourceACL:
		return Allow
	}
	return Deny
}

// ManageAll is the authorizer of every request when ACLs are disabled.
func ManageAll() *Authorizer { return &Authorizer{fallback: manageAll} }

// NewAuthorizer builds the authorizer of a token with these policies' rules
// (merged, S84) over the default policy ("allow" or "deny").
func NewAuthorizer(accessorID string, policies []*Rules, defaultPolicy string) (*Authorizer, error) {
	a := &Authorizer{AccessorID: accessorID, fallback: denyAll}
	switch defaultPolicy {
	case "allow":
		a.fallback = allowAll
	case "deny":
	default:
		return nil, consulf("Unsupported default ACL policy: %s", defaultPolicy)
	}
	if len(policies) > 0 {
		p, err := compile(Merge(policies))
		if err != nil {
			return nil, err
		}
		a.policy = p
	}
	return a, nil
}

func (a *Authorizer) chain(r Resource, d func(p *policyAuthorizer) Decision) Decision {
	if a.policy != nil {
		if got := d(a.policy); got != Default {
			return got
		}
	}
	return a.fallback.decide(r)
}

// Decide answers whether the token may have need on resource r's name
// (singletons ignore name). A resource Consul does not know is denied.
func (a *Authorizer) Decide(r Resource, name string, need Access) Decision {
	if !knownResource(r) {
		return Deny
	}
	return a.chain(r, func(p *policyAuthorizer) Decision { return p.decide(r, name, need) })
}

// Allowed is Decide == Allow.
func (a *Authorizer) Allowed(r Resource, name string, need Access) bool {
	return a.Decide(r, name, need) == Allow
}

// Check returns nil if the token may have need on r's name, else the
// denial with Consul's text (S85).
func (a *Authorizer) Check(r Resource, name string, need Access) error {
	if a.Allowed(r, name, need) {
		return nil
	}
	if r.Singleton() {
		name = ""
	}
	return &PermissionDenied{Accessor: a.AccessorID, Resource: r, Access: need, Name: name}
}

// KeyWritePrefix decides a write on every key under prefix (a recursive
// delete): the governing prefix rule must grant write and no rule at or under
// prefix may grant less (S85).
func (a *Authorizer) KeyWritePrefix(prefix string) error {
	if a.chain(ResourceKey, func(p *policyAuthorizer) Decision { return p.keyWritePrefix(prefix) }) == Allow {
		return nil
	}
	return &PermissionDenied{Accessor: a.AccessorID, Resource: ResourceKey, Access: AccessWrite, Name: prefix}
}

// NodeReadAll decides read on every node: a catch-all that reads and no
// rule that denies.
func (a *Authorizer) NodeReadAll() bool {
	return a.chain(ResourceNode, func(p *policyAuthorizer) Decision { return p.node.all(AccessRead) }) == Allow
}

// ServiceReadAll decides read on every service.
func (a *Authorizer) ServiceReadAll() bool {
	return a.chain(ResourceService, func(p *policyAuthorizer) Decision { return p.service.all(AccessRead) }) == Allow
}

// ServiceWriteAny decides whether the token may write some service.
func (a *Authorizer) ServiceWriteAny() bool {
	return a.chain(ResourceService, func(p *policyAuthorizer) Decision { return p.service.any(AccessWrite) }) == Allow
}

// ServiceReadPrefix decides read on every service whose name starts with
// prefix.
func (a *Authorizer) ServiceReadPrefix(prefix string) bool {
	return a.chain(ResourceService, func(p *policyAuthorizer) Decision { return p.serviceReadPrefix(prefix) }) == Allow
}

func knownResource(r Resource) bool {
	switch r {
	case ResourceACL, ResourceAgent, ResourceEvent, ResourceIntention, ResourceKey, ResourceKeyring,
		ResourceMesh, ResourceNode, ResourceOperator, ResourcePeering, ResourceQuery, ResourceService, ResourceSession:
		return true
	}
	return false
}

// Singleton reports whether r is one thing rather than a family of named
// ones (acl, keyring, mesh, operator, peering): its denials name nothing.
func (r Resource) Singleton() bool {
	switch r {
	case ResourceACL, ResourceKeyring, ResourceMesh, ResourceOperator, ResourcePeering:
		return true
	}
	return false
}

// Enforce is Consul's named-permission check, as /v1/internal/acl/authorize
// asks it: access is "read", "write", "list" (keys) or "write-prefix"
// (keys), case ignored. An unknown resource or level is an error with
// Consul's text.
func (a *Authorizer) Enforce(r Resource, name, access string) (Decision, error) {
	lower := strings.ToLower(access)
	if !knownResource(r) {
		return Deny, consulf("Invalid ACL resource requested: %q", r)
	}
	switch {
	case lower == policyRead:
		return a.Decide(r, name, AccessRead), nil
	case lower == policyWrite:
		return a.Decide(r, name, AccessWrite), nil
	case lower == policyList && r == ResourceKey:
		return a.Decide(r, name, AccessList), nil
	case lower == "write-prefix" && r == ResourceKey:
		if a.KeyWritePrefix(name) == nil {
			return Allow, nil
		}
		return Deny, nil
	}
	return Deny, consulf("Invalid access level for %s resource: %s", r, access)
}
