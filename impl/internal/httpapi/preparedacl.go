package httpapi

import (
	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// Prepared queries under ACLs (S90), as Consul decides them. A query with
// a name (or a template, whose name is a prefix) is governed by query
// rules on that name: writing it needs query:write, on the new name and on
// the name it had; reading it query:read. A query without a name is
// governed by nothing but its ID: anyone who has the ID may read, change or
// delete it, and only a management token sees it listed. Whoever is not a
// management token (acl:write) sees a stored Token as "<hidden>". An
// execute runs with the query's Token, else the caller's, and keeps the
// instances that token may read (node:read and service:read).

// queryPrefix is the name query rules decide a query on, if it has one.
func queryPrefix(pq model.PreparedQuery) (string, bool) {
	if pq.Name != "" || pq.IsTemplate() {
		return pq.Name, true
	}
	return "", false
}

// isManagement is acl:write, which sees query tokens.
func isManagement(a *acl.Authorizer) bool {
	return a.Allowed(acl.ResourceACL, "", acl.AccessWrite)
}

// queryShown is pq as the caller sees it: its Token hidden unless the
// caller manages ACLs.
func queryShown(a *acl.Authorizer, pq model.PreparedQuery) queryJSON {
	out := toQuery(pq)
	if out.Token != "" && !isManagement(a) {
		out.Token = model.RedactedToken
	}
	return out
}

// vetQueryWrite decides a create, update or delete of pq over s: query:write
// on its new name, and on the name of the query it replaces or deletes.
func vetQueryWrite(a *acl.Authorizer, s *model.State, op model.QueryOp) error {
	if op.Op != model.QueryDelete {
		if prefix, ok := queryPrefix(op.Query); ok {
			if err := a.Check(acl.ResourceQuery, prefix, acl.AccessWrite); err != nil {
				return err
			}
		}
	}
	if op.Op == model.QueryCreate {
		return nil
	}
	if old, ok := s.Query(op.Query.ID); ok {
		if prefix, ok := queryPrefix(old); ok {
			return a.Check(acl.ResourceQuery, prefix, acl.AccessWrite)
		}
	}
	return nil
}

// readableQueries is a query listing as the caller sees it: a management
// token sees all; others the named queries they may read (a dropped one
// is reported) and no unnamed ones (which are not).
func readableQueries(a *acl.Authorizer, all []model.PreparedQuery) ([]queryJSON, bool) {
	out := []queryJSON{}
	manage := isManagement(a)
	dropped := false
	for _, pq := range all {
		if !manage {
			prefix, named := queryPrefix(pq)
			if !named {
				continue
			}
			if !a.Allowed(acl.ResourceQuery, prefix, acl.AccessRead) {
				dropped = true
				continue
			}
		}
		out = append(out, queryShown(a, pq))
	}
	return out, dropped
}

// queryReadable decides a read of one query: a named one needs
// query:read, refused with Consul's bare "Permission denied"; an unnamed
// one is open to whoever has its ID, unless unnamedOpen is false (an
// explain, which Consul allows only to a management token).
func queryReadable(a *acl.Authorizer, pq model.PreparedQuery, unnamedOpen bool) error {
	prefix, named := queryPrefix(pq)
	switch {
	case isManagement(a):
		return nil
	case named && a.Allowed(acl.ResourceQuery, prefix, acl.AccessRead):
		return nil
	case !named && unnamedOpen:
		return nil
	}
	return aclFailure(&acl.PermissionDenied{})
}

// executeAuthz resolves the token an execute runs with over s: the query's
// own, else the caller's; a stored token that no longer resolves reads
// nothing. It also says whether the filtered header may be told.
func (h *handler) executeAuthz(c *call, s *model.State, pq model.PreparedQuery) (*acl.Authorizer, bool, error) {
	if !h.opts.ACL.enabled() {
		return acl.ManageAll(), false, nil
	}
	if pq.Token == "" {
		a, err := h.authz(c, s)
		return a, !h.maskFiltered(c), err
	}
	a, err := h.opts.ACL.Resolver.Resolve(s, pq.Token)
	if err != nil {
		return &acl.Authorizer{}, false, nil
	}
	return a, pq.Token != acl.AnonymousSecret, nil
}

// vetQuery decides a query write over the state now; nil with ACLs off.
func (h *handler) vetQuery(c *call, op model.QueryOp) error {
	if !h.opts.ACL.enabled() {
		return nil
	}
	var err error
	h.b.Read(func(s *model.State) {
		var a *acl.Authorizer
		if a, err = h.authz(c, s); err == nil {
			err = vetQueryWrite(a, s, op)
		}
	})
	return aclFailure(err)
}
