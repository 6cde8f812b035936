package acl

import (
	"strings"
	"testing"
)

// TestParseAcceptsHCLAndJSON: the same rules written in HCL and in JSON
// parse to the same rules, in source order.
func TestParseAcceptsHCLAndJSON(t *testing.T) {
	hcl := `
acl = "read"
key_prefix "app/" { policy = "write" }
key "app/secret" { policy = "deny" }
session_prefix "" { policy = "write" }
service "web" { policy = "read" intentions = "write" }
operator = "read"
`
	json := `{
  "acl": "read",
  "key_prefix": {"app/": {"policy": "write"}},
  "key": {"app/secret": {"policy": "deny"}},
  "session_prefix": {"": {"policy": "write"}},
  "service": {"web": {"policy": "read", "intentions": "write"}},
  "operator": "read"
}`
	for name, text := range map[string]string{"hcl": hcl, "json": json} {
		r, err := Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := `acl=read; operator=read; key "app/secret"=deny; key_prefix "app/"=write; service "web"=read; session_prefix ""=write`
		if got := r.String(); got != want {
			t.Errorf("%s: parsed %s\nwant %s", name, got, want)
		}
		if r.Services[0].Intentions != "write" {
			t.Errorf("%s: service intentions %q", name, r.Services[0].Intentions)
		}
	}
}

// TestParseRefusesWithConsulsTexts: each refusal is the text Consul 1.22.7
// answers for the same rules (recorded in spec/CONSUL.md §21).
func TestParseRefusesWithConsulsTexts(t *testing.T) {
	cases := []struct{ rules, want string }{
		{`key_prefix "a/" { policy = `, `Failed to parse ACL rules: At 1:29: object expected closing RBRACE got: EOF`},
		{"acl = \"read\"\nacl = \"write\"", `Failed to parse ACL rules: The argument "acl" at 2:1 was already set. Each argument can only be defined once`},
		{`key "a" { policy = "read" policy = "write" }`, `Failed to parse ACL rules: The argument "policy" at 1:27 was already set. Each argument can only be defined once`},
		{`key_prefix "a/" { policy = "wrte" }`, `Invalid key_prefix policy: &acl.KeyRule{Prefix:"a/", Policy:"wrte", EnterpriseRule:acl.EnterpriseRule{}}`},
		{`acl = "list"`, `Invalid acl policy: "list"`},
		{`agent "n1" { policy = "list" }`, `Invalid agent policy: &acl.AgentRule{Node:"n1", Policy:"list"}`},
		{`node_prefix "" { }`, `Invalid node_prefix policy: &acl.NodeRule{Name:"", Policy:"", EnterpriseRule:acl.EnterpriseRule{}}`},
		{`service "web" { policy = "read" intentions = "list" }`, `Invalid service intentions policy: &acl.ServiceRule{Name:"web", Policy:"read", Intentions:"list", EnterpriseRule:acl.EnterpriseRule{}}`},
		{`session "n1" { policy = "all" }`, `Invalid session policy: &acl.SessionRule{Node:"n1", Policy:"all"}`},
		{`event_prefix "" { policy = "x" }`, `Invalid event_prefix policy: &acl.EventRule{Event:"", Policy:"x"}`},
		{`query "q" { policy = "x" }`, `Invalid query policy: &acl.PreparedQueryRule{Prefix:"q", Policy:"x"}`},
		{`keyring = "x"`, `Invalid keyring policy: "x"`},
		{`peering = "list"`, `Invalid peering policy: "list"`},
		// The order is Consul's: acl first, then the keyed rules, then the
		// other one-word resources.
		{"operator = \"x\"\nkey \"k\" { policy = \"x\" }", `Invalid key policy: &acl.KeyRule{Prefix:"k", Policy:"x", EnterpriseRule:acl.EnterpriseRule{}}`},
	}
	for _, c := range cases {
		_, err := Parse(c.rules)
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q) = %v\nwant %s", c.rules, err, c.want)
		}
	}
}

// TestParseStoredTakesTheLastRepeatedArgument: rules stored before
// duplicates were refused still resolve, the last value counting.
func TestParseStoredTakesTheLastRepeatedArgument(t *testing.T) {
	r, err := ParseStored("acl = \"read\"\nacl = \"write\"")
	if err != nil || r.ACL != "write" {
		t.Fatalf("ParseStored = %v, %v; want acl=write", r, err)
	}
}

// TestParseKeepsListOnKeysOnlyAndDropsIdentity: list is an access level of
// keys only; identity rules (deprecated) parse and are dropped; empty rules
// are a policy with nothing in it.
func TestParseKeepsListOnKeysOnlyAndDropsIdentity(t *testing.T) {
	if _, err := Parse(`key_prefix "" { policy = "list" }`); err != nil {
		t.Errorf("list on key_prefix refused: %v", err)
	}
	if _, err := Parse(`node_prefix "" { policy = "list" }`); err == nil {
		t.Error("list on node_prefix accepted")
	}
	r, err := Parse(`identity "web" { policy = "write" }`)
	if err != nil || len(r.Identities) != 0 {
		t.Errorf("identity rule: %v, %v", r, err)
	}
	if r, err := Parse(""); err != nil || r.String() != "" {
		t.Errorf("empty rules: %v, %v", r, err)
	}
}

// TestParseBoundsTheText: rules over MaxRulesLen are refused before hcl
// sees them.
func TestParseBoundsTheText(t *testing.T) {
	big := strings.Repeat(" ", MaxRulesLen+1)
	if _, err := Parse(big); err == nil || !strings.HasPrefix(err.Error(), "Failed to parse ACL rules:") {
		t.Errorf("oversized rules: %v", err)
	}
}
