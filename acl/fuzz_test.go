package acl

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// resolveFunc is Resolver.Resolve's shape, so a property can be shown to
// fail on a broken resolver.
type resolveFunc func(s *model.State, secret string) (*Authorizer, error)

// probes are the permissions the parse property asks about.
var probes = []struct {
	r    Resource
	name string
	need Access
}{
	{ResourceKey, "", AccessWrite}, {ResourceKey, "a/b", AccessRead}, {ResourceSession, "n1", AccessWrite},
	{ResourceACL, "", AccessWrite}, {ResourceOperator, "", AccessRead}, {ResourceNode, "n1", AccessWrite},
	{ResourceService, "web", AccessRead}, {ResourceQuery, "q", AccessWrite},
}

// parseProperty holds for one rules text, with resolve deciding for a token
// whose only policy holds the text:
//   - parsing never panics, and what Parse accepts ParseStored accepts and
//     an authorizer can be built from;
//   - a text ParseStored refuses makes resolution fail, so the request is
//     denied: a parse error never allows anything (S88);
//   - a text that parses grants nothing under default deny that it does
//     not grant under its own merge (deciding is deterministic and the
//     merge of a policy with itself changes nothing).
func parseProperty(rules string, resolve resolveFunc) error {
	strict, strictErr := Parse(rules)
	stored, storedErr := ParseStored(rules)
	if strictErr == nil {
		if storedErr != nil {
			return fmt.Errorf("Parse accepts what ParseStored refuses: %v", storedErr)
		}
		if _, err := NewAuthorizer("t", []*Rules{strict}, "deny"); err != nil {
			return fmt.Errorf("accepted rules build no authorizer: %v", err)
		}
	}
	if strictErr != nil && !strings.HasPrefix(strictErr.Error(), "Failed to parse ACL rules:") && !strings.HasPrefix(strictErr.Error(), "Invalid ") {
		return fmt.Errorf("refusal %q is not one of Consul's texts", strictErr)
	}
	s := stateWithPolicy(rules)
	a, err := resolve(s, "s1")
	if storedErr != nil {
		if err == nil {
			return fmt.Errorf("rules that do not parse (%v) resolved to an authorizer", storedErr)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("rules that parse did not resolve: %v", err)
	}
	twice, err := NewAuthorizer("t", []*Rules{stored, stored}, "deny")
	if err != nil {
		return fmt.Errorf("merge of the policy with itself: %v", err)
	}
	for _, p := range probes {
		if got, again := a.Decide(p.r, p.name, p.need), twice.Decide(p.r, p.name, p.need); got != again {
			return fmt.Errorf("%s:%s on %q decided %v, and %v with the policy twice", p.r, p.need, p.name, got, again)
		}
	}
	return nil
}

// stateWithPolicy is a state with one policy holding rules as stored (not
// checked: the property is about what resolution does with any text) and
// a token with secret s1 linking it.
func stateWithPolicy(rules string) *model.State {
	s := model.New()
	s.Apply(1, model.Command{ACL: &model.ACLOp{Verb: model.ACLPolicySet, Create: true,
		Policy: &model.ACLPolicy{ID: "p1", Name: "p", Rules: rules}}})
	s.Apply(2, model.Command{ACL: &model.ACLOp{Verb: model.ACLTokenSet, Create: true,
		Token: &model.ACLToken{AccessorID: "a1", SecretID: "s1", Policies: []string{"p1"}}}})
	return s
}

func realResolve(s *model.State, secret string) (*Authorizer, error) {
	return NewResolver(Config{Enabled: true, DefaultPolicy: "deny", Datacenter: "dc1"}).Resolve(s, secret)
}

// FuzzParse checks parseProperty on any rules text.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		``, `acl = "read"`, "acl = \"read\"\nacl = \"write\"", `key_prefix "a/" { policy = "write" }`,
		`key_prefix "a/" { policy = `, `{"key": {"a": {"policy": "read"}}}`, `{"key": [{"a": {"policy": "list"}}]}`,
		`service "web" { policy = "read" intentions = "write" }`, `node "x" { policy = "WRITE" }`,
		`keyring = "x"`, `identity "a" { policy = "write" }`, `key "a" { policy = ["read"] }`, `{"acl": 1}`,
		`session_prefix "" { policy = "write" } key "" { policy = "deny" }`, "\x00", `key "a" "b" { policy = "read" }`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rules string) {
		if len(rules) > 4096 {
			return // the limit is tested apart; long inputs only slow the fuzzer
		}
		if err := parseProperty(rules, realResolve); err != nil {
			t.Fatalf("rules %q: %v", rules, err)
		}
	})
}

// TestParsePropertyCatchesAResolverThatAllowsOnError: a resolver that,
// when a stored policy does not parse, lets the request through with
// everything fails the property, on a text that does not parse.
func TestParsePropertyCatchesAResolverThatAllowsOnError(t *testing.T) {
	allowOnError := func(s *model.State, secret string) (*Authorizer, error) {
		a, err := realResolve(s, secret)
		if err != nil {
			return ManageAll(), nil
		}
		return a, nil
	}
	if err := parseProperty(`key "a" {`, allowOnError); err == nil {
		t.Fatal("the property passed a resolver that allows what does not parse")
	}
	ignoreRules := func(s *model.State, secret string) (*Authorizer, error) {
		return NewAuthorizer("a1", nil, "deny")
	}
	if err := parseProperty(`key "a" {`, ignoreRules); err == nil {
		t.Fatal("the property passed a resolver that answers without reading the rules")
	}
	if err := parseProperty(`key "a" {`, realResolve); err != nil {
		t.Fatalf("the real resolver: %v", err)
	}
}

// headerProperty holds for one request's token sources: the secret is
// ?token when it is non-empty, else X-Consul-Token when non-empty, else
// the first word after an Authorization scheme that is "bearer" in any
// case, else none; and a secret never holds a space.
func headerProperty(secret func(url.Values, http.Header) string, query, xToken, auth string) error {
	q := url.Values{}
	if query != "" {
		q.Set("token", query)
	}
	h := http.Header{}
	if xToken != "" {
		h.Set("X-Consul-Token", xToken)
	}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	got := secret(q, h)
	want := ""
	switch {
	case query != "":
		want = query
	case xToken != "":
		want = xToken
	default:
		if scheme, rest, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "bearer") {
			want = strings.TrimSpace(strings.Split(strings.TrimSpace(rest), " ")[0])
		}
	}
	if got != want {
		return fmt.Errorf("secret %q, want %q", got, want)
	}
	if query == "" && xToken == "" && strings.Contains(got, " ") {
		return errors.New("a bearer secret holds a space")
	}
	return nil
}

// FuzzRequestSecret checks headerProperty on any three sources.
func FuzzRequestSecret(f *testing.F) {
	f.Add("", "", "Bearer abc")
	f.Add("", "", "bearer  abc def")
	f.Add("", "", "Basic abc")
	f.Add("q", "h", "Bearer b")
	f.Add("", "h", "Bearer b")
	f.Add("", "", "Bearer")
	f.Add("", "", "Bearer \t")
	f.Fuzz(func(t *testing.T, query, xToken, auth string) {
		// Header values a client can send: net/http refuses these bytes.
		if strings.ContainsAny(xToken+auth, "\r\n\x00") {
			return
		}
		if err := headerProperty(RequestSecret, query, xToken, auth); err != nil {
			t.Fatalf("?token=%q X-Consul-Token=%q Authorization=%q: %v", query, xToken, auth, err)
		}
	})
}

// TestHeaderPropertyCatchesBrokenParsers: the property fails for a parser
// that puts the header before ?token and for one that takes any scheme.
func TestHeaderPropertyCatchesBrokenParsers(t *testing.T) {
	headerFirst := func(q url.Values, h http.Header) string {
		if v := h.Get("X-Consul-Token"); v != "" {
			return v
		}
		return RequestSecret(q, h)
	}
	if headerProperty(headerFirst, "q", "h", "") == nil {
		t.Error("the property passed a parser that puts the header first")
	}
	anyScheme := func(q url.Values, h http.Header) string {
		if s := RequestSecret(q, h); s != "" {
			return s
		}
		_, rest, _ := strings.Cut(h.Get("Authorization"), " ")
		return rest
	}
	if headerProperty(anyScheme, "", "", "Basic abc") == nil {
		t.Error("the property passed a parser that takes any scheme")
	}
	if err := headerProperty(RequestSecret, "", "", "bEaReR  tok extra"); err != nil {
		t.Errorf("the real parser: %v", err)
	}
}
