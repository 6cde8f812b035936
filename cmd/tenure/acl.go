package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/tenurekv/tenure/impl/agent"
)

// The acl block (S86, S87) and Consul's deprecated names for its keys.
// Settings collect what the files say; validate resolves the deprecated
// names (a current key wins over its deprecated one, whatever the order)
// and checks the policies with Consul's messages.

// aclSettings are the acl keys as the config files gave them.
type aclSettings struct {
	Enabled                bool
	DefaultPolicy          string
	DownPolicy             string
	EnableTokenPersistence bool
	EnableKeyListPolicy    bool
	// tokens by acl.tokens name; deprecated holds what deprecated keys
	// gave, by the deprecated key.
	tokens     map[string]string
	deprecated map[string]string
}

// deprecatedACLKeys are Consul's deprecated acl keys and the current key
// each stands for, in the order Consul resolves them: the first one set
// fills its current key if the file did not set that.
var deprecatedACLKeys = []struct{ old, current string }{
	{"acl.tokens.agent_master", "acl.tokens.agent_recovery"},
	{"acl_agent_master_token", "acl.tokens.agent_recovery"},
	{"acl_agent_token", "acl.tokens.agent"},
	{"acl_token", "acl.tokens.default"},
	{"acl.tokens.master", "acl.tokens.initial_management"},
	{"acl_master_token", "acl.tokens.initial_management"},
	{"acl_replication_token", "acl.tokens.replication"},
	{"acl_default_policy", "acl.default_policy"},
	{"acl_down_policy", "acl.down_policy"},
}

func (a *aclSettings) setToken(name string, v any) error {
	var s string
	if err := asString(v, &s); err != nil {
		return err
	}
	if a.tokens == nil {
		a.tokens = map[string]string{}
	}
	a.tokens[name] = s
	return nil
}

// setDeprecated records a deprecated key's value, and warns as Consul does.
func (a *aclSettings) setDeprecated(old, current string, v any, warn func(string)) error {
	var s string
	if err := asString(v, &s); err != nil {
		return err
	}
	if a.deprecated == nil {
		a.deprecated = map[string]string{}
	}
	a.deprecated[old] = s
	warn(fmt.Sprintf("The '%s' field is deprecated. Use the '%s' field instead.", old, current))
	return nil
}

// aclTokenNames are the acl.tokens keys tenure honours.
var aclTokenNames = []string{"initial_management", "agent", "default", "agent_recovery", "replication",
	"config_file_service_registration", "dns"}

func init() {
	honour := func(path string, f func(s *settings, v any, warn func(string)) error) { honoured[path] = f }
	honour("acl.enabled", func(s *settings, v any, _ func(string)) error { return asBool(v, &s.ACL.Enabled) })
	honour("acl.default_policy", func(s *settings, v any, _ func(string)) error { return asString(v, &s.ACL.DefaultPolicy) })
	honour("acl.down_policy", func(s *settings, v any, _ func(string)) error { return asString(v, &s.ACL.DownPolicy) })
	honour("acl.enable_token_persistence", func(s *settings, v any, _ func(string)) error {
		return asBool(v, &s.ACL.EnableTokenPersistence)
	})
	honour("acl.enable_key_list_policy", func(s *settings, v any, _ func(string)) error {
		return asBool(v, &s.ACL.EnableKeyListPolicy)
	})
	for _, name := range aclTokenNames {
		honour("acl.tokens."+name, func(s *settings, v any, _ func(string)) error { return s.ACL.setToken(name, v) })
	}
	for _, d := range deprecatedACLKeys {
		honour(d.old, func(s *settings, v any, warn func(string)) error {
			return s.ACL.setDeprecated(d.old, d.current, v, warn)
		})
	}
	honour("acl_enable_key_list_policy", func(s *settings, v any, warn func(string)) error {
		warn("The 'acl_enable_key_list_policy' field is deprecated. Use the 'acl.enable_key_list_policy' field instead.")
		var b bool
		if err := asBool(v, &b); err != nil {
			return err
		}
		s.ACL.EnableKeyListPolicy = s.ACL.EnableKeyListPolicy || b
		return nil
	})
	honour("acl_datacenter", func(s *settings, v any, warn func(string)) error {
		// Consul enables ACLs when this old key is set.
		warn("The 'acl_datacenter' field is deprecated. Use the 'primary_datacenter' field instead.")
		var dc string
		if err := asString(v, &dc); err != nil {
			return err
		}
		s.ACL.Enabled = true
		return nil
	})
}

// validate resolves the deprecated keys and checks the policies, with
// Consul's messages.
func (a *aclSettings) validate() error {
	for _, d := range deprecatedACLKeys {
		v, ok := a.deprecated[d.old]
		if !ok {
			continue
		}
		switch current := d.current; current {
		case "acl.default_policy":
			if a.DefaultPolicy == "" {
				a.DefaultPolicy = v
			}
		case "acl.down_policy":
			if a.DownPolicy == "" {
				a.DownPolicy = v
			}
		default:
			name := strings.TrimPrefix(current, "acl.tokens.")
			if _, set := a.tokens[name]; !set {
				if a.tokens == nil {
					a.tokens = map[string]string{}
				}
				a.tokens[name] = v
			}
		}
	}
	if a.DefaultPolicy == "" {
		a.DefaultPolicy = "allow"
	}
	if a.DownPolicy == "" {
		a.DownPolicy = "extend-cache"
	}
	switch a.DefaultPolicy {
	case "allow", "deny":
	default:
		//lint:ignore ST1005 Consul's message, word for word
		return fmt.Errorf("Unsupported default ACL policy: %s", a.DefaultPolicy)
	}
	switch a.DownPolicy {
	case "allow", "deny", "async-cache", "extend-cache":
	default:
		//lint:ignore ST1005 Consul's message, word for word
		return fmt.Errorf("Unsupported down ACL policy: %s", a.DownPolicy)
	}
	return nil
}

// agentConfig is the acl block as the agent takes it.
func (a *aclSettings) agentConfig() agent.ACLConfig {
	return agent.ACLConfig{Enabled: a.Enabled, DefaultPolicy: a.DefaultPolicy, DownPolicy: a.DownPolicy,
		EnableTokenPersistence: a.EnableTokenPersistence, EnableKeyListPolicy: a.EnableKeyListPolicy,
		Tokens: maps.Clone(a.tokens)}
}
