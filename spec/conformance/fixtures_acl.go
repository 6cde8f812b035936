package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ACL fixtures: requests with a token of the case's choosing, and
// policies and tokens that are deleted after the case. The run's own token
// (-token) is a management token under the ACL profiles.

// preflightACL checks that the server has ACLs on and that the run's token
// manages them.
func (e *env) preflightACL(ctx context.Context) error {
	if e.token == "" {
		return &usageError{msg: "the ACL profiles need a management token: give -token"}
	}
	r, err := e.do(ctx, http.MethodGet, "/v1/acl/tokens", nil)
	if err != nil {
		return err
	}
	if r.Code != 200 {
		return fmt.Errorf("the ACL profiles need a server with ACLs on and -token a management token: GET /v1/acl/tokens answered %s", r)
	}
	return nil
}

// DoAs sends a request with token in X-Consul-Token ("" sends no token:
// the anonymous token).
func (t *caseT) DoAs(token, method, path string, body []byte) *resp {
	var hdr http.Header
	if token != "" {
		hdr = http.Header{"X-Consul-Token": {token}}
	}
	return t.DoHeaders(hdr, method, path, body)
}

// DoHeaders sends a request with exactly these headers.
func (t *caseT) DoHeaders(hdr http.Header, method, path string, body []byte) *resp {
	r, err := t.env.doWith(t.ctx, method, path, body, hdr)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// ACLName is a policy or role name unique to the run and case.
func (t *caseT) ACLName(name string) string {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.c.name)
	return fmt.Sprintf("conf-%s-%s-%d-%s", t.env.runID, slug, t.seq, name)
}

// rulesJSON writes rules as Consul's JSON rules syntax, so names with any
// characters need no HCL escaping.
func rulesJSON(rules map[string]any) string {
	b, err := json.Marshal(rules)
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return string(b)
}

// named is {"<name>": {"policy": level}}, one keyed rule of the JSON
// syntax.
func named(name, level string) map[string]any {
	return map[string]any{name: map[string]any{"policy": level}}
}

// CreatePolicy creates a policy and returns its ID; it is deleted after
// the case.
func (t *caseT) CreatePolicy(name, rules string) string {
	r := t.DoJSON(http.MethodPut, "/v1/acl/policy", map[string]any{"Name": name, "Rules": rules})
	if r.Code != 200 {
		t.Fatalf("create policy %s: %s", name, r)
	}
	var out struct{ ID string }
	t.decode("create policy", r, &out)
	t.deleteLater("/v1/acl/policy/" + out.ID)
	return out.ID
}

// CreateToken creates a token linking the named policies and returns its
// secret and accessor; it is deleted after the case.
func (t *caseT) CreateToken(policies ...string) (secret, accessor string) {
	var links []map[string]string
	for _, p := range policies {
		links = append(links, map[string]string{"Name": p})
	}
	r := t.DoJSON(http.MethodPut, "/v1/acl/token", map[string]any{"Description": t.c.ID(), "Policies": links})
	if r.Code != 200 {
		t.Fatalf("create token: %s", r)
	}
	var out struct{ SecretID, AccessorID string }
	t.decode("create token", r, &out)
	t.deleteLater("/v1/acl/token/" + out.AccessorID)
	return out.SecretID, out.AccessorID
}

// deleteLater deletes an ACL record after the case; one already deleted
// is fine.
func (t *caseT) deleteLater(path string) {
	t.Cleanup(func(ctx context.Context) error {
		r, err := t.env.do(ctx, http.MethodDelete, path, nil)
		if err != nil {
			return err
		}
		if r.Code != 200 && r.Code != 404 {
			return fmt.Errorf("delete %s: %s", path, r)
		}
		return nil
	})
}

// denied is Consul's text for a token lacking a permission (S85).
func denied(accessor, perm, name string) string {
	s := fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission '%s'", accessor, perm)
	if name != "" {
		s += ` on "` + name + `"`
	}
	return s
}

// deniedAnonymous is the anonymous token's variant.
func deniedAnonymous(perm, name string) string {
	s := fmt.Sprintf("Permission denied: anonymous token lacks permission '%s'", perm)
	if name != "" {
		s += ` on "` + name + `"`
	}
	return s + ". The anonymous token is used implicitly when a request does not specify a token."
}

// expect records a failure unless r has the status and, if text is not
// "", exactly that body.
func (t *caseT) expect(what string, r *resp, code int, text string) bool {
	if r.Code != code || (text != "" && r.Text() != text) {
		t.Errorf("%s: got %s, want %d %q", what, r, code, text)
		return false
	}
	return true
}

// refused records a failure unless r is a refusal (400 as tenure answers,
// 500 as Consul does) with exactly text (S87, S88).
func (t *caseT) refused(what string, r *resp, text string) {
	if (r.Code != 400 && r.Code != 500) || r.Text() != text {
		t.Errorf("%s: got %s, want a refusal (400 or 500) %q", what, r, text)
	}
}
