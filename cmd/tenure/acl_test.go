package main

import (
	"fmt"
	"strings"
	"testing"
)

// The acl keys' samples for TestEveryConsulKey: each takes effect, and a
// deprecated one warns with Consul's words.
func init() {
	sample := func(path string, value any, took func(s settings) bool, warning string) {
		honouredSamples[path] = struct {
			value   any
			took    func(s settings) bool
			warning string
		}{value, took, warning}
	}
	sample("acl.enabled", true, func(s settings) bool { return s.ACL.Enabled }, "")
	sample("acl.default_policy", "deny", func(s settings) bool { return s.ACL.DefaultPolicy == "deny" }, "")
	sample("acl.down_policy", "deny", func(s settings) bool { return s.ACL.DownPolicy == "deny" }, "")
	sample("acl.enable_token_persistence", true, func(s settings) bool { return s.ACL.EnableTokenPersistence }, "")
	sample("acl.enable_key_list_policy", true, func(s settings) bool { return s.ACL.EnableKeyListPolicy }, "")
	for _, name := range aclTokenNames {
		sample("acl.tokens."+name, "t-"+name, func(s settings) bool { return s.ACL.tokens[name] == "t-"+name }, "")
	}
	for _, d := range deprecatedACLKeys {
		sample(d.old, "old", func(s settings) bool { return s.ACL.deprecated[d.old] == "old" },
			fmt.Sprintf("The '%s' field is deprecated. Use the '%s' field instead.", d.old, d.current))
	}
	sample("acl_enable_key_list_policy", true, func(s settings) bool { return s.ACL.EnableKeyListPolicy },
		"The 'acl_enable_key_list_policy' field is deprecated. Use the 'acl.enable_key_list_policy' field instead.")
	sample("acl_datacenter", "dc1", func(s settings) bool { return s.ACL.Enabled },
		"The 'acl_datacenter' field is deprecated. Use the 'primary_datacenter' field instead.")
}

// TestACLSettings: a current key wins over its deprecated name in either
// order, the defaults are Consul's, and bad policies are refused with
// Consul's messages.
func TestACLSettings(t *testing.T) {
	s, _, err := loadAs(t, "hcl", map[string]any{
		"acl_token": "old-default", "acl_master_token": "old-mgmt", "acl_agent_token": "agent-only-old",
		"acl": map[string]any{"enabled": true, "tokens": map[string]any{"default": "new-default", "master": "older-mgmt"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ACL.validate(); err != nil {
		t.Fatal(err)
	}
	cfg := s.ACL.agentConfig()
	want := map[string]string{"default": "new-default", "agent": "agent-only-old"}
	for k, v := range want {
		if cfg.Tokens[k] != v {
			t.Errorf("token %s = %q, want %q", k, cfg.Tokens[k], v)
		}
	}
	// acl.tokens.master comes before acl_master_token, as in Consul.
	if im := cfg.Tokens["initial_management"]; im != "older-mgmt" {
		t.Errorf("initial_management %q, want older-mgmt", im)
	}
	if cfg.DefaultPolicy != "allow" || cfg.DownPolicy != "extend-cache" || !cfg.Enabled {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, c := range []struct {
		block map[string]any
		want  string
	}{
		{map[string]any{"default_policy": "maybe"}, "Unsupported default ACL policy: maybe"},
		{map[string]any{"down_policy": "maybe"}, "Unsupported down ACL policy: maybe"},
	} {
		s, _, err := loadAs(t, "json", map[string]any{"acl": c.block})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ACL.validate(); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.block, err, c.want)
		}
	}
}

// TestACLSettingsReachTheAgent: validate turns the acl block into the
// agent's configuration, and the script-check warning follows Consul's
// condition (ACLs off).
func TestACLSettingsReachTheAgent(t *testing.T) {
	s := defaultSettings()
	s.Dev, s.EnableScriptChecks = true, true
	s.ACL = aclSettings{Enabled: true, DefaultPolicy: "deny", tokens: map[string]string{"initial_management": "root"}}
	var warnings []string
	if err := s.validate(func(w string) { warnings = append(warnings, w) }); err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "without ACLs") {
			t.Errorf("warned about script checks without ACLs while ACLs are on: %q", w)
		}
	}
	if cfg := s.ACL.agentConfig(); cfg.Tokens["initial_management"] != "root" || cfg.DefaultPolicy != "deny" {
		t.Errorf("agent ACL config %+v", cfg)
	}
}
