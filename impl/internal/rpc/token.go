package rpc

import (
	"net/http"
	"strings"
)

// RequestToken is the ACL token a client sent with r, read as Consul's
// agents read it: the token query parameter first, then X-Consul-Token,
// then an "Authorization: Bearer <token>" header; "" when there is none.
// An agent that forwards r puts it in Origin.Token.
func RequestToken(r *http.Request) string {
	// Most requests carry no query token: parse the query only when one
	// may be there, since parsing showed in a loaded leader's profile.
	if strings.Contains(r.URL.RawQuery, "token=") {
		if t := r.URL.Query().Get("token"); t != "" {
			return t
		}
	}
	if t := r.Header.Get("X-Consul-Token"); t != "" {
		return t
	}
	scheme, value, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	// A bearer token has no spaces: the first word after the scheme.
	if f := strings.Fields(value); len(f) > 0 {
		return f[0]
	}
	return ""
}
