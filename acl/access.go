package acl

import (
	"fmt"
	"strings"
)

// Access is a level a rule grants or a request needs. The order matters:
// write implies list and read, list implies read.
type Access int

// Access levels, as Consul names them in rules.
const (
	AccessUnknown Access = iota
	AccessDeny
	AccessRead
	AccessList
	AccessWrite
)

// Rule words.
const (
	policyDeny  = "deny"
	policyRead  = "read"
	policyList  = "list"
	policyWrite = "write"
)

func (a Access) String() string {
	switch a {
	case AccessDeny:
		return policyDeny
	case AccessRead:
		return policyRead
	case AccessList:
		return policyList
	case AccessWrite:
		return policyWrite
	}
	return "unknown"
}

// parseAccess reads a rule's policy word, ignoring case as Consul does.
func parseAccess(word string) (Access, error) {
	switch strings.ToLower(word) {
	case policyDeny:
		return AccessDeny, nil
	case policyRead:
		return AccessRead, nil
	case policyList:
		return AccessList, nil
	case policyWrite:
		return AccessWrite, nil
	}
	return AccessUnknown, fmt.Errorf("%q is not a valid access level", word)
}

// validPolicy reports whether word is an access level a rule may grant;
// list only on keys.
func validPolicy(word string, allowList bool) bool {
	a, err := parseAccess(word)
	return err == nil && (allowList || a != AccessList)
}

// outranks reports whether policy word a replaces b when two policies of
// one token give the same resource and name (S84): deny, then write, then
// list, then read. The comparison is on the words as written, so "DENY",
// which grants like "deny", never replaces anything in a merge: Consul's
// behaviour, kept so both decide alike.
func outranks(a, b string) bool {
	for _, w := range []string{policyDeny, policyWrite, policyList, policyRead} {
		switch {
		case a == w:
			return true
		case b == w:
			return false
		}
	}
	return false
}

// Resource names a kind of thing a rule governs, as in Consul's denial
// texts ("key:write").
type Resource string

// Resources. Consul 1.22 accepts rules for every one of them; the ones tenure
// has nothing of (events, intentions, the keyring, mesh, peering) are parsed,
// kept and decided, so a policy written for Consul reads back unchanged and
// the authorize endpoint answers for them as Consul does.
const (
	ResourceACL       Resource = "acl"
	ResourceAgent     Resource = "agent"
	ResourceEvent     Resource = "event"
	ResourceIntention Resource = "intention"
	ResourceKey       Resource = "key"
	ResourceKeyring   Resource = "keyring"
	ResourceMesh      Resource = "mesh"
	ResourceNode      Resource = "node"
	ResourceOperator  Resource = "operator"
	ResourcePeering   Resource = "peering"
	ResourceQuery     Resource = "query"
	ResourceService   Resource = "service"
	ResourceSession   Resource = "session"
)

// Decision is one authorizer's answer; Default defers to the next one in the
// chain (the default policy).
type Decision int

// Decisions.
const (
	Default Decision = iota
	Allow
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "default"
}

// grants is Consul's enforce: what a rule of level rule decides for a
// request that needs need.
func grants(rule, need Access) Decision {
	switch rule {
	case AccessWrite:
		return Allow
	case AccessList:
		if need == AccessList || need == AccessRead {
			return Allow
		}
		return Deny
	case AccessRead:
		if need == AccessRead {
			return Allow
		}
		return Deny
	case AccessDeny:
		return Deny
	}
	return Default
}
