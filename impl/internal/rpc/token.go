package rpc

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/tenurekv/tenure/acl"
)

// RequestToken is the ACL token a client sent with r, read as Consul's
// agents read it (acl.RequestSecret: the token query parameter, then
// X-Consul-Token, then "Authorization: Bearer"); "" when there is none. An
// agent that forwards r puts it in Origin.Token.
func RequestToken(r *http.Request) string {
	// Most requests carry no query token: parse the query only when one
	// may be there, since parsing showed in a loaded leader's profile.
	var q url.Values
	if strings.Contains(r.URL.RawQuery, "token=") {
		q = r.URL.Query()
	}
	return acl.RequestSecret(q, r.Header)
}
