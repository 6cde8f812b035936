package acl

import (
	"errors"
	"fmt"
	"strings"
)

// AnonymousAccessorID and AnonymousSecret name the anonymous token, which
// a request without a token is made with (S86).
const (
	AnonymousAccessorID = "00000000-0000-0000-0000-000000000002"
	AnonymousSecret     = "anonymous"
)

// Consul's texts for the errors a resolution or a decision returns; its HTTP
// layer answers 403 for the first and the permission denials, 500 for the
// root names, 401 for disabled ACLs on the ACL endpoints.
var (
	// ErrNotFound: the secret names no token (or a policy or role a read
	// asked for does not exist).
	ErrNotFound = consulf("ACL not found")
	// ErrRootDenied: "allow", "deny" and "manage" were root tokens in old
	// Consul and are refused as secrets.
	ErrRootDenied = consulf("Cannot resolve root ACL")
	// ErrDisabled: an ACL endpoint on an agent with ACLs off.
	ErrDisabled = consulf("ACL support disabled")
)

// notBootstrapped wraps ErrNotFound while the cluster has not been
// bootstrapped, as Consul's servers do, so an operator sees why.
func notBootstrapped() error {
	return consulf("ACL system must be bootstrapped before making any requests that require authorization: %w", ErrNotFound)
}

// PermissionDenied is a refused permission: which token lacked what. Its
// text is Consul's (S85).
type PermissionDenied struct {
	// Cause, when set, is the whole reason ("ACL bootstrap no longer
	// allowed (reset index: 7)").
	Cause string
	// Accessor is the token's AccessorID.
	Accessor string
	Resource Resource
	Access   Access
	// Name is the resource's name; "" for singletons (acl, operator…).
	Name string
}

func (e *PermissionDenied) Error() string {
	var b strings.Builder
	b.WriteString("Permission denied")
	if e.Cause != "" {
		b.WriteString(": " + e.Cause)
		return b.String()
	}
	if e.Resource == "" {
		return b.String()
	}
	anonymous := e.Accessor == AnonymousAccessorID
	if anonymous {
		b.WriteString(": anonymous token")
	} else {
		fmt.Fprintf(&b, ": token with AccessorID '%s'", e.Accessor)
	}
	fmt.Fprintf(&b, " lacks permission '%s:%s'", e.Resource, e.Access)
	if e.Name != "" {
		// Quoted as Consul quotes it: plain double quotes, no escaping.
		b.WriteString(` on "` + e.Name + `"`)
	}
	if anonymous {
		b.WriteString(". The anonymous token is used implicitly when a request does not specify a token.")
	}
	return b.String()
}

// IsPermissionDenied reports whether err is a permission denial.
func IsPermissionDenied(err error) bool {
	var pd *PermissionDenied
	return errors.As(err, &pd)
}

// consulf is fmt.Errorf for Consul's own texts, which start with a capital
// letter; clients match them word for word.
func consulf(format string, args ...any) error { return fmt.Errorf(format, args...) }
