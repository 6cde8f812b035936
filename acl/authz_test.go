package acl

import (
	"testing"
)

func mustParse(t *testing.T, text string) *Rules {
	t.Helper()
	r, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return r
}

func authorizer(t *testing.T, defaultPolicy string, policies ...string) *Authorizer {
	t.Helper()
	var rules []*Rules
	for _, p := range policies {
		rules = append(rules, mustParse(t, p))
	}
	a, err := NewAuthorizer("tok", rules, defaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type decision struct {
	r    Resource
	name string
	need Access
	want Decision
}

func checkDecisions(t *testing.T, a *Authorizer, cases []decision) {
	t.Helper()
	for _, c := range cases {
		if got := a.Decide(c.r, c.name, c.need); got != c.want {
			t.Errorf("%s:%s on %q = %s, want %s", c.r, c.need, c.name, got, c.want)
		}
	}
}

// TestExactBeatsPrefixLongestPrefixWins: S84's precedence within one
// policy.
func TestExactBeatsPrefixLongestPrefixWins(t *testing.T) {
	a := authorizer(t, "deny", `
key_prefix "" { policy = "read" }
key_prefix "app/" { policy = "write" }
key_prefix "app/secret/" { policy = "deny" }
key "app/secret/open" { policy = "write" }
key "app/" { policy = "deny" }
`)
	checkDecisions(t, a, []decision{
		{ResourceKey, "other", AccessRead, Allow},
		{ResourceKey, "other", AccessWrite, Deny},
		{ResourceKey, "app/x", AccessWrite, Allow},
		{ResourceKey, "app/", AccessRead, Deny}, // exact beats the prefix of the same name
		{ResourceKey, "app/secret/x", AccessRead, Deny},
		{ResourceKey, "app/secret/open", AccessWrite, Allow},
		{ResourceKey, "app/secret/opener", AccessRead, Deny}, // an exact rule is no prefix
		{ResourceSession, "n1", AccessWrite, Deny},           // nothing covers it: the default
	})
}

// TestListGrantsReadAndList: list grants list and read, not write; read
// does not grant list.
func TestListGrantsReadAndList(t *testing.T) {
	a := authorizer(t, "deny", `key_prefix "l/" { policy = "list" }`+"\n"+`key_prefix "r/" { policy = "read" }`)
	checkDecisions(t, a, []decision{
		{ResourceKey, "l/a", AccessList, Allow}, {ResourceKey, "l/a", AccessRead, Allow}, {ResourceKey, "l/a", AccessWrite, Deny},
		{ResourceKey, "r/a", AccessList, Deny}, {ResourceKey, "r/a", AccessRead, Allow},
	})
}

// TestMergeDenyWriteListRead: when several policies of a token rule the same
// name, deny outranks write, write list, list read (S84); different names
// keep their own rules.
func TestMergeDenyWriteListRead(t *testing.T) {
	a := authorizer(t, "deny",
		`key "k" { policy = "read" }`+"\n"+`key_prefix "p/" { policy = "write" }`+"\n"+`node "n" { policy = "write" }`,
		`key "k" { policy = "write" }`+"\n"+`key_prefix "p/" { policy = "deny" }`+"\n"+`node "n" { policy = "read" }`,
		`key "k" { policy = "list" }`+"\n"+`acl = "read"`,
		`acl = "write"`,
	)
	checkDecisions(t, a, []decision{
		{ResourceKey, "k", AccessWrite, Allow},
		{ResourceKey, "p/x", AccessRead, Deny},
		{ResourceNode, "n", AccessWrite, Allow},
		{ResourceACL, "", AccessWrite, Allow},
	})
}

// TestMergeComparesWordsAsWritten: Consul's merge compares policy words as
// written, so an upper-case word grants as its lower-case form inside one
// policy but never replaces another in a merge, and "WRITE" on acl is lost
// (recorded against Consul in spec/CONSUL.md §21).
func TestMergeComparesWordsAsWritten(t *testing.T) {
	a := authorizer(t, "deny", "acl = \"WRITE\"\nkey_prefix \"u/\" { policy = \"WRITE\" }\nkey \"u/x\" { policy = \"Deny\" }")
	checkDecisions(t, a, []decision{
		{ResourceACL, "", AccessRead, Deny},
		{ResourceKey, "u/y", AccessWrite, Allow},
		{ResourceKey, "u/x", AccessWrite, Deny},
	})
	b := authorizer(t, "deny", `key "k" { policy = "Write" }`, `key "k" { policy = "read" }`)
	checkDecisions(t, b, []decision{{ResourceKey, "k", AccessWrite, Deny}})
}

// TestDefaultPolicy: what no rule covers follows the default policy, except
// ACL management, which allow never grants.
func TestDefaultPolicy(t *testing.T) {
	allow := authorizer(t, "allow", `key "k" { policy = "deny" }`)
	checkDecisions(t, allow, []decision{
		{ResourceKey, "k", AccessRead, Deny},
		{ResourceKey, "j", AccessWrite, Allow},
		{ResourceOperator, "", AccessWrite, Allow},
		{ResourceACL, "", AccessRead, Deny},
	})
	checkDecisions(t, ManageAll(), []decision{{ResourceACL, "", AccessWrite, Allow}, {ResourceKey, "x", AccessWrite, Allow}})
	var zero Authorizer
	checkDecisions(t, &zero, []decision{{ResourceKey, "x", AccessRead, Deny}})
	if _, err := NewAuthorizer("t", nil, "maybe"); err == nil || err.Error() != "Unsupported default ACL policy: maybe" {
		t.Errorf("bad default policy: %v", err)
	}
}

// TestMeshAndPeeringFallBackToOperator and the intention rules a service
// rule implies.
func TestMeshAndPeeringFallBackToOperator(t *testing.T) {
	a := authorizer(t, "deny", `operator = "write"`+"\n"+`peering = "read"`+"\n"+
		`service "web" { policy = "write" }`+"\n"+`service "db" { policy = "deny" }`+"\n"+`service "api" { policy = "read" intentions = "write" }`)
	checkDecisions(t, a, []decision{
		{ResourceMesh, "", AccessWrite, Allow},
		{ResourcePeering, "", AccessWrite, Deny},
		{ResourceIntention, "web", AccessRead, Allow},
		{ResourceIntention, "web", AccessWrite, Deny},
		{ResourceIntention, "db", AccessRead, Deny},
		{ResourceIntention, "api", AccessWrite, Allow},
		{ResourceIntention, "*", AccessRead, Allow},
		{ResourceIntention, "*", AccessWrite, Deny},
	})
}

// TestKeyWritePrefix: a recursive delete needs write from the governing
// prefix rule and from every rule under the prefix.
func TestKeyWritePrefix(t *testing.T) {
	a := authorizer(t, "deny", `key_prefix "a/" { policy = "write" }`+"\n"+`key "a/b/locked" { policy = "read" }`)
	for prefix, want := range map[string]bool{"a/": false, "a/b/": false, "a/c/": true, "": false, "b/": false} {
		if got := a.KeyWritePrefix(prefix) == nil; got != want {
			t.Errorf("KeyWritePrefix(%q) allowed=%v, want %v", prefix, got, want)
		}
	}
	open := authorizer(t, "allow", `key "x/y" { policy = "write" }`)
	if open.KeyWritePrefix("x/") != nil {
		t.Error("default allow with only write rules under x/ refused KeyWritePrefix")
	}
}

// TestAllAndAny: the whole-table decisions.
func TestAllAndAny(t *testing.T) {
	a := authorizer(t, "deny", `node_prefix "" { policy = "read" }`+"\n"+`node "secret" { policy = "deny" }`+"\n"+`service "web" { policy = "write" }`)
	if a.NodeReadAll() {
		t.Error("NodeReadAll despite a deny rule")
	}
	if !a.ServiceWriteAny() {
		t.Error("ServiceWriteAny refused with a service write rule")
	}
	if a.ServiceReadAll() {
		t.Error("ServiceReadAll without a catch-all")
	}
	b := authorizer(t, "deny", `service_prefix "" { policy = "read" }`+"\n"+`service_prefix "int-" { policy = "deny" }`)
	if !b.ServiceReadPrefix("web") || b.ServiceReadPrefix("in") || b.ServiceReadPrefix("int-x") {
		t.Error("ServiceReadPrefix")
	}
}

// TestDenialTexts: Consul's words for a refused permission.
func TestDenialTexts(t *testing.T) {
	a := authorizer(t, "deny")
	if err := a.Check(ResourceKey, "b/x", AccessWrite); err == nil ||
		err.Error() != `Permission denied: token with AccessorID 'tok' lacks permission 'key:write' on "b/x"` {
		t.Errorf("key denial: %v", err)
	}
	if err := a.Check(ResourceACL, "ignored", AccessRead); err == nil ||
		err.Error() != `Permission denied: token with AccessorID 'tok' lacks permission 'acl:read'` {
		t.Errorf("acl denial: %v", err)
	}
	anon, _ := NewAuthorizer(AnonymousAccessorID, nil, "deny")
	if err := anon.Check(ResourceSession, "vm", AccessWrite); err == nil ||
		err.Error() != `Permission denied: anonymous token lacks permission 'session:write' on "vm". The anonymous token is used implicitly when a request does not specify a token.` {
		t.Errorf("anonymous denial: %v", err)
	}
	if got := (&PermissionDenied{Cause: "ACL bootstrap no longer allowed (reset index: 6)"}).Error(); got != "Permission denied: ACL bootstrap no longer allowed (reset index: 6)" {
		t.Errorf("cause denial: %s", got)
	}
	if !IsPermissionDenied(a.Check(ResourceKey, "k", AccessRead)) {
		t.Error("IsPermissionDenied")
	}
}

// TestEnforce: the named-permission checks of /v1/internal/acl/authorize.
func TestEnforce(t *testing.T) {
	a := authorizer(t, "deny", `key_prefix "k/" { policy = "list" }`)
	if d, err := a.Enforce(ResourceKey, "k/a", "LIST"); err != nil || d != Allow {
		t.Errorf("key list: %v %v", d, err)
	}
	if _, err := a.Enforce(ResourceNode, "n", "list"); err == nil || err.Error() != "Invalid access level for node resource: list" {
		t.Errorf("node list: %v", err)
	}
	if _, err := a.Enforce("bogus", "n", "read"); err == nil || err.Error() != `Invalid ACL resource requested: "bogus"` {
		t.Errorf("bogus resource: %v", err)
	}
	if d, _ := a.Enforce(ResourceKey, "k/", "write-prefix"); d != Deny {
		t.Errorf("write-prefix: %v", d)
	}
}
