package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// carryProperty: a request forwarded by an agent with ACLs on and default
// token def is decided on the server with the secret the agent would
// decide it with: the request's own, else def, else the anonymous one
// (S86). carry is carryToken or a broken stand-in.
func carryProperty(carry func(*rpc.Request, ACLOptions), query, xToken, auth, def string) error {
	u := "/v1/kv/k"
	if query != "" {
		u += "?token=" + url.QueryEscape(query)
	}
	r, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil // not a request a client can send
	}
	if xToken != "" {
		r.Header.Set("X-Consul-Token", xToken)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	tokens, _ := NewAgentTokens(map[string]string{TokenDefault: def}, "")
	opts := ACLOptions{Resolver: acl.NewResolver(acl.Config{Enabled: true, DefaultPolicy: "deny"}), Tokens: tokens}
	want := acl.EffectiveSecret(r.URL.Query(), r.Header, def)
	if want == "" {
		want = acl.AnonymousSecret
	}
	req, err := forwardRequest(r, rpc.Origin{Node: "n"}, nil)
	if err != nil {
		return fmt.Errorf("forward: %v", err)
	}
	carry(req, opts)
	// The server decides with the frame's token alone, applying no
	// default of its own.
	got := req.Origin.Token
	if got != want {
		return fmt.Errorf("forwarded request decided with %q, the agent with %q", got, want)
	}
	return nil
}

// FuzzCarryToken checks carryProperty on any token sources and default.
func FuzzCarryToken(f *testing.F) {
	f.Add("", "", "", "")
	f.Add("", "", "", "def")
	f.Add("q", "h", "Bearer b", "def")
	f.Add("", "", "Basic x", "def")
	f.Add("", "", "Bearer  ", "def")
	f.Add("a b", "", "", "")
	f.Fuzz(func(t *testing.T, query, xToken, auth, def string) {
		if strings.ContainsAny(xToken+auth, "\r\n\x00") {
			return // header values net/http refuses
		}
		if err := carryProperty(carryToken, query, xToken, auth, def); err != nil {
			t.Fatalf("?token=%q X-Consul-Token=%q Authorization=%q default=%q: %v", query, xToken, auth, def, err)
		}
	})
}

// TestCarryPropertyCatchesATokenLeftBehind: forwarding without the agent's
// default token, or without the anonymous secret, fails the property.
func TestCarryPropertyCatchesATokenLeftBehind(t *testing.T) {
	nothing := func(*rpc.Request, ACLOptions) {}
	if carryProperty(nothing, "", "", "", "def") == nil {
		t.Error("the property passed forwarding that drops the default token")
	}
	if carryProperty(nothing, "", "", "", "") == nil {
		t.Error("the property passed forwarding that leaves the server to pick a token")
	}
	if err := carryProperty(carryToken, "", "", "Basic x", "def"); err != nil {
		t.Errorf("carryToken: %v", err)
	}
}
