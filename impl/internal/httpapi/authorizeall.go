package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tenurekv/tenure/acl"
)

// Permission is one decision a filtered list asks for.
type Permission struct {
	Resource acl.Resource
	Name     string
	Access   acl.Access
}

// AuthorizeAll decides many permissions for one request at once: whether
// each is allowed, in order, or the failure that decides none of them (an
// unknown token). It is optional beside Authorize: an agent without it
// decides a list entry by entry.
type AuthorizeAll func(r *http.Request, ps []Permission) ([]bool, error)

// RemoteAuthorizeAll is RemoteAuthorize for a filtered list: it asks a
// server through api in one request per maxAuthorizations permissions,
// where asking for each entry would cost a round trip to a server apiece.
func RemoteAuthorizeAll(api http.Handler) AuthorizeAll {
	return func(r *http.Request, ps []Permission) ([]bool, error) {
		out := make([]bool, 0, len(ps))
		for len(ps) > 0 {
			batch := ps[:min(len(ps), maxAuthorizations)]
			ps = ps[len(batch):]
			q := make([]authorizeJSON, len(batch))
			for i, p := range batch {
				q[i] = authorizeJSON{Resource: string(p.Resource), Segment: p.Name, Access: p.Access.String()}
			}
			body, err := json.Marshal(q)
			if err != nil {
				return nil, err
			}
			code, answer := serveInternal(api, r, http.MethodPost, "/v1/internal/acl/authorize", body)
			if code != http.StatusOK {
				return nil, &apiError{status: code, msg: strings.TrimSpace(string(answer))}
			}
			var answers []authorizeJSON
			if err := json.Unmarshal(answer, &answers); err != nil || len(answers) != len(batch) {
				return nil, errorf(http.StatusInternalServerError, "ACL authorization: unexpected answer from the server")
			}
			for _, a := range answers {
				if a.Allow == nil {
					return nil, errorf(http.StatusInternalServerError, "ACL authorization: unexpected answer from the server")
				}
				out = append(out, *a.Allow)
			}
		}
		return out, nil
	}
}

// decideAll decides ps for r, each distinct permission once: through all
// when the agent has it, else one at a time through one. A denial is
// false; any other failure is the answer.
func decideAll(r *http.Request, ps []Permission, one Authorize, all AuthorizeAll) ([]bool, error) {
	slot := make(map[Permission]int, len(ps))
	var distinct []Permission
	for _, p := range ps {
		if _, ok := slot[p]; !ok {
			slot[p] = len(distinct)
			distinct = append(distinct, p)
		}
	}
	var decided []bool
	if all != nil {
		var err error
		if decided, err = all(r, distinct); err != nil {
			return nil, err
		}
	} else {
		decided = make([]bool, len(distinct))
		for i, p := range distinct {
			ok, err := allowedOrFailure(one(r, p.Resource, p.Name, p.Access))
			if err != nil {
				return nil, err
			}
			decided[i] = ok
		}
	}
	out := make([]bool, len(ps))
	for i, p := range ps {
		out[i] = decided[slot[p]]
	}
	return out, nil
}

// allAllowed is n decisions that allow, for an agent without ACLs.
func allAllowed(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// readableOf keeps the items whose permission decide allows, in order, and
// says whether it dropped any (S90).
func readableOf[T any](items []T, perm func(T) Permission, decide func([]Permission) ([]bool, error)) (kept []T, dropped bool, err error) {
	ps := make([]Permission, len(items))
	for i, it := range items {
		ps[i] = perm(it)
	}
	allowed, err := decide(ps)
	if err != nil {
		return nil, false, err
	}
	for i, it := range items {
		if allowed[i] {
			kept = append(kept, it)
		} else {
			dropped = true
		}
	}
	return kept, dropped, nil
}
