package acl

import (
	"maps"
	"slices"
	"strings"
)

// table holds one resource's keyed rules: exact names and prefixes, each
// with the access its merged rule grants.
type table struct {
	exact  map[string]Access
	prefix map[string]Access
	// names lists every name with a rule of either kind, sorted: the walks
	// of the any/all/prefix decisions visit rules in this order.
	names []string
}

func newTable() *table {
	return &table{exact: map[string]Access{}, prefix: map[string]Access{}}
}

func (t *table) put(name string, a Access, prefix bool) {
	if prefix {
		t.prefix[name] = a
	} else {
		t.exact[name] = a
	}
}

func (t *table) seal() {
	names := maps.Clone(t.exact)
	maps.Copy(names, t.prefix)
	t.names = slices.Sorted(maps.Keys(names))
}

// lookup is the rule that governs name (S84): an exact rule for it, else the
// prefix rule with the longest prefix of it.
func (t *table) lookup(name string) (Access, bool) {
	if a, ok := t.exact[name]; ok {
		return a, true
	}
	best, found := -1, false
	var access Access
	for p, a := range t.prefix {
		if len(p) > best && strings.HasPrefix(name, p) {
			best, access, found = len(p), a, true
		}
	}
	return access, found
}

func (t *table) decide(name string, need Access) Decision {
	if a, ok := t.lookup(name); ok {
		return grants(a, need)
	}
	return Default
}

// leafDecisions is what one name's rules decide: the prefix rule's and the
// exact rule's, Default where there is none.
func (t *table) leaf(name string, need Access) (prefix, exact Decision, hasExact bool) {
	prefix = Default
	if a, ok := t.prefix[name]; ok {
		prefix = grants(a, need)
	}
	a, hasExact := t.exact[name]
	if hasExact {
		exact = grants(a, need)
	}
	return prefix, exact, hasExact
}

// any is Consul's anyAllowed: allowed if some rule allows. A catch-all
// prefix rule that denies makes the default a denial that more specific
// rules may still override.
func (t *table) any(need Access) Decision {
	decision := Default
	if _, ok := t.prefix[""]; ok {
		if p, _, _ := t.leaf("", need); p == Allow {
			return Allow
		} else if p != Default {
			decision = p
		}
	}
	for _, name := range t.names {
		p, e, hasExact := t.leaf(name, need)
		if p == Allow || (hasExact && e == Allow) {
			return Allow
		}
	}
	return decision
}

// all is Consul's allAllowed: allowed only if a catch-all allows and no rule
// denies.
func (t *table) all(need Access) Decision {
	decision := Default
	if _, ok := t.prefix[""]; ok {
		p, _, _ := t.leaf("", need)
		if p == Deny {
			return Deny
		}
		decision = p
	}
	for _, name := range t.names {
		p, e, hasExact := t.leaf(name, need)
		d := p
		if p != Deny && hasExact && e != Default {
			d = e
		}
		if d == Deny {
			return Deny
		}
	}
	return decision
}

// underPrefix is whether every rule at or under prefix grants at least
// need; Deny if one does not, else Default.
func (t *table) underPrefix(prefix string, ok func(Access) bool) Decision {
	for _, name := range t.names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if a, has := t.prefix[name]; has && !ok(a) {
			return Deny
		}
		if a, has := t.exact[name]; has && !ok(a) {
			return Deny
		}
	}
	return Default
}

// governingPrefix is the longest prefix rule at or above prefix.
func (t *table) governingPrefix(prefix string) (Access, bool) {
	best, found := -1, false
	var access Access
	for p, a := range t.prefix {
		if len(p) > best && strings.HasPrefix(prefix, p) {
			best, access, found = len(p), a, true
		}
	}
	return access, found
}

// policyAuthorizer decides from one token's merged rules; Default where
// they say nothing.
type policyAuthorizer struct {
	acl, keyring, operator, mesh, peering                       *Access
	agent, key, node, service, intention, session, event, query *table
}

func compile(r *Rules) (*policyAuthorizer, error) {
	p := &policyAuthorizer{agent: newTable(), key: newTable(), node: newTable(), service: newTable(),
		intention: newTable(), session: newTable(), event: newTable(), query: newTable()}
	tables := map[Resource]*table{ResourceAgent: p.agent, ResourceKey: p.key, ResourceNode: p.node,
		ResourceService: p.service, ResourceSession: p.session, ResourceEvent: p.event, ResourceQuery: p.query}
	for _, l := range r.keyed() {
		for _, rule := range *l.rules {
			a, err := parseAccess(rule.Policy)
			if err != nil {
				return nil, err
			}
			tables[l.kind.resource].put(rule.Name, a, l.kind.prefix)
			if l.kind.resource != ResourceService {
				continue
			}
			// A service rule without intentions grants read on them if it
			// reads or writes the service, else denies them (compared as
			// written, as Consul does).
			word := rule.Intentions
			if word == "" {
				word = policyDeny
				if rule.Policy == policyRead || rule.Policy == policyWrite {
					word = policyRead
				}
			}
			ia, err := parseAccess(word)
			if err != nil {
				return nil, err
			}
			p.intention.put(rule.Name, ia, l.kind.prefix)
		}
	}
	for _, t := range []*table{p.agent, p.key, p.node, p.service, p.intention, p.session, p.event, p.query} {
		t.seal()
	}
	for _, s := range []struct {
		word string
		dst  **Access
	}{{r.ACL, &p.acl}, {r.Keyring, &p.keyring}, {r.Operator, &p.operator}, {r.Mesh, &p.mesh}, {r.Peering, &p.peering}} {
		if s.word == "" {
			continue
		}
		a, err := parseAccess(s.word)
		if err != nil {
			return nil, err
		}
		*s.dst = &a
	}
	return p, nil
}

func single(a *Access, need Access) Decision {
	if a == nil {
		return Default
	}
	return grants(*a, need)
}

// keyed returns the table of a keyed resource, nil for a singleton.
func (p *policyAuthorizer) keyed(r Resource) *table {
	switch r {
	case ResourceAgent:
		return p.agent
	case ResourceEvent:
		return p.event
	case ResourceIntention:
		return p.intention
	case ResourceKey:
		return p.key
	case ResourceNode:
		return p.node
	case ResourceQuery:
		return p.query
	case ResourceService:
		return p.service
	case ResourceSession:
		return p.session
	}
	return nil
}

// decide is the policy's answer for one permission on one name.
func (p *policyAuthorizer) decide(r Resource, name string, need Access) Decision {
	switch r {
	case ResourceACL:
		return single(p.acl, need)
	case ResourceKeyring:
		return single(p.keyring, need)
	case ResourceOperator:
		return single(p.operator, need)
	case ResourceMesh:
		// mesh and peering fall back to operator when the policy is silent.
		if p.mesh != nil {
			return single(p.mesh, need)
		}
		return single(p.operator, need)
	case ResourcePeering:
		if p.peering != nil {
			return single(p.peering, need)
		}
		return single(p.operator, need)
	}
	if t := p.keyed(r); t != nil {
		if r == ResourceIntention && name == "*" {
			// "*" means every intention: any rule for read, all for write.
			if need == AccessRead {
				return t.any(need)
			}
			return t.all(need)
		}
		return t.decide(name, need)
	}
	return Deny
}

// keyWritePrefix is Consul's KeyWritePrefix: write on every key under prefix
// needs a governing prefix rule that grants write (or none, leaving it to
// the default) and no rule at or under prefix that grants less.
func (p *policyAuthorizer) keyWritePrefix(prefix string) Decision {
	base := Default
	if a, ok := p.key.governingPrefix(prefix); ok {
		if a != AccessWrite {
			return Deny
		}
		base = Allow
	}
	if p.key.underPrefix(prefix, func(a Access) bool { return a == AccessWrite }) == Deny {
		return Deny
	}
	return base
}

// serviceReadPrefix is Consul's ServiceReadPrefix: read on every service
// under prefix.
func (p *policyAuthorizer) serviceReadPrefix(prefix string) Decision {
	access := Default
	if a, ok := p.service.governingPrefix(prefix); ok {
		if a == AccessRead || a == AccessWrite {
			access = Allow
		} else {
			access = Deny
		}
	}
	if p.service.underPrefix(prefix, func(a Access) bool { return a == AccessRead || a == AccessWrite }) == Deny {
		return Deny
	}
	return access
}
