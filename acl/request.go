package acl

import (
	"net/http"
	"net/url"
	"strings"
)

// RequestSecret is the token a request names, in Consul's order (S86):
// ?token=, then X-Consul-Token, then "Authorization: Bearer <secret>" (the
// scheme's case ignored, the first word after it). "" means the request
// names none: the agent's default token applies, else the anonymous token.
func RequestSecret(query url.Values, header http.Header) string {
	if t := query.Get("token"); t != "" {
		return t
	}
	if t := header.Get("X-Consul-Token"); t != "" {
		return t
	}
	auth := header.Get("Authorization")
	if auth == "" {
		return ""
	}
	scheme, value, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	// Bearer tokens hold no spaces: the first word is the token.
	value = strings.TrimSpace(value)
	token, _, _ := strings.Cut(value, " ")
	return strings.TrimSpace(token)
}

// EffectiveSecret is the secret a request is decided with on an agent whose
// acl.tokens.default is defaultToken: the request's own, else the default,
// else "" (anonymous).
func EffectiveSecret(query url.Values, header http.Header, defaultToken string) string {
	if t := RequestSecret(query, header); t != "" {
		return t
	}
	return defaultToken
}
