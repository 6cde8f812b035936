package agent

import (
	"fmt"
	"path/filepath"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// ACLConfig is the agent's acl block, as Consul's agent reads it (S86,
// S87). The zero value is ACLs off.
type ACLConfig struct {
	Enabled bool
	// DefaultPolicy decides what no rule covers: "allow" (the default) or
	// "deny".
	DefaultPolicy string
	// DownPolicy is kept for Consul's configurations; a client agent
	// forwards every decision to a server, so there is no cache for it to
	// govern.
	DownPolicy string
	// EnableTokenPersistence keeps the tokens set through
	// PUT /v1/agent/token in <data_dir>/acl-tokens.json.
	EnableTokenPersistence bool
	// EnableKeyListPolicy makes a KV listing need key:list on its prefix.
	EnableKeyListPolicy bool
	// Tokens are acl.tokens by Consul's names: initial_management, agent,
	// default, agent_recovery, replication, config_file_service_registration,
	// dns.
	Tokens map[string]string
}

// initialManagement is the token a leader writes at the start of its term.
func (c ACLConfig) initialManagement() string { return c.Tokens["initial_management"] }

// httpOptions builds the API's ACL options: the resolver, the agent's own
// tokens (loaded from dataDir's acl-tokens.json when persistence is on)
// and, on a server with a data dir, the bootstrap reset file.
func (c ACLConfig) httpOptions(dataDir, datacenter, node string, server bool) (httpapi.ACLOptions, error) {
	agentTokens := map[string]string{}
	for name, v := range c.Tokens {
		if name != "initial_management" && v != "" {
			agentTokens[name] = v
		}
	}
	file := ""
	if c.Enabled && c.EnableTokenPersistence && dataDir != "" {
		file = filepath.Join(dataDir, httpapi.TokensFile)
	}
	tokens, err := httpapi.NewAgentTokens(agentTokens, file)
	if err != nil {
		return httpapi.ACLOptions{}, fmt.Errorf("agent: %w", err)
	}
	if datacenter == "" {
		datacenter = "dc1"
	}
	opts := httpapi.ACLOptions{
		Resolver: acl.NewResolver(acl.Config{Enabled: c.Enabled, DefaultPolicy: c.DefaultPolicy, Datacenter: datacenter,
			NodeName: node, AgentRecovery: func() string { return tokens.Get(httpapi.TokenAgentRecovery) }}),
		Tokens:        tokens,
		KeyListPolicy: c.EnableKeyListPolicy,
	}
	if server && dataDir != "" {
		opts.BootstrapResetFile = filepath.Join(dataDir, "acl-bootstrap-reset")
	}
	return opts, nil
}

// ownTokens are the secrets an agent's own requests to the servers carry
// (anti-entropy, a gossip-less server's self-registration), chosen as
// Consul's agent chooses them and read at each request, so a token set
// through PUT /v1/agent/token is used from the next one. Each returns ""
// with ACLs off (the servers then ask nothing), and the anonymous secret
// when the agent holds no token for it: a request the agent sends itself
// is never left for the server to decide with a default of its own (S86).
type ownTokens struct {
	// agent is for the node's record, the full sync's reads and every
	// deregistration: acl.tokens.agent, else acl.tokens.default.
	agent func() string
	// register is for a service or check registration (the Syncer's
	// SyncConfig.RegisterToken): the token the entry keeps from its
	// registration, else, for one the agent's configuration or the agent
	// itself defined, acl.tokens.config_file_service_registration, else
	// acl.tokens.default (CONSUL.md §24).
	register func(own string, local bool) string
}

// ownTokens builds c's ownTokens over tokens, the agent's token store.
func (c ACLConfig) ownTokens(tokens *httpapi.AgentTokens) ownTokens {
	if !c.Enabled {
		return ownTokens{agent: func() string { return "" }, register: func(string, bool) string { return "" }}
	}
	orAnonymous := func(s string) string {
		if s == "" {
			return acl.AnonymousSecret
		}
		return s
	}
	return ownTokens{
		agent: func() string { return orAnonymous(tokens.AgentSecret()) },
		register: func(own string, local bool) string {
			if own == "" && local {
				own = tokens.Get(httpapi.TokenConfigFileRegistration)
			}
			if own == "" {
				own = tokens.Get(httpapi.TokenDefault)
			}
			return orAnonymous(own)
		},
	}
}

// registration is register, or "" on the zero ownTokens (ACLs off).
func (t ownTokens) registration(own string, local bool) string {
	if t.register == nil {
		return ""
	}
	return t.register(own, local)
}
