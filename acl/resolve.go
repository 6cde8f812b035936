package acl

import (
	"crypto/subtle"
	"fmt"
	"slices"
	"sync"

	"github.com/tenurekv/tenure/model"
)

// Config is an agent's ACL configuration, as far as deciding goes.
type Config struct {
	// Enabled turns ACLs on; off, every request is allowed (S86).
	Enabled bool
	// DefaultPolicy decides what no rule covers: "allow" (Consul's
	// default when empty) or "deny".
	DefaultPolicy string
	// Datacenter is this agent's: a policy or identity limited to other
	// datacenters grants nothing here.
	Datacenter string
	// AgentRecovery returns the secret of acl.tokens.agent_recovery (""
	// for none), resolved on this agent without the replicated tables; it
	// may change at run time (PUT /v1/agent/token). NodeName is the agent's
	// node, the one that token may write.
	AgentRecovery func() string
	NodeName      string
}

// Policy returns the default policy, "allow" when unset.
func (c Config) Policy() string {
	if c.DefaultPolicy == "" {
		return "allow"
	}
	return c.DefaultPolicy
}

// Resolver turns a request's secret into the authorizer of its token over a
// model.State. Resolution is a pure function of the state, the secret and
// the configuration; the resolver only keeps parsed rules keyed by their
// text, so a decision never depends on what it cached.
type Resolver struct {
	cfg Config

	mu    sync.Mutex
	rules map[string]*Rules
}

// maxCachedRules bounds the cache; a full cache is emptied, not grown.
const maxCachedRules = 4096

// NewResolver returns a resolver for an agent configured as cfg.
func NewResolver(cfg Config) *Resolver {
	return &Resolver{cfg: cfg, rules: map[string]*Rules{}}
}

// Config is the configuration the resolver decides with.
func (r *Resolver) Config() Config { return r.cfg }

// Resolve returns the authorizer of the token whose secret is secret in s:
// "" is the anonymous token; with ACLs off every request is allowed (S86).
// Errors: ErrRootDenied for Consul's old root names, ErrNotFound (with the
// not-bootstrapped explanation before a bootstrap) for an unknown secret,
// and a parse failure of a stored policy, which must deny.
func (r *Resolver) Resolve(s *model.State, secret string) (*Authorizer, error) {
	if !r.cfg.Enabled {
		return ManageAll(), nil
	}
	switch secret {
	case "allow", "deny", "manage":
		return nil, ErrRootDenied
	case "":
		secret = AnonymousSecret
	}
	if rec := r.recovery(); rec != "" && subtle.ConstantTimeCompare([]byte(rec), []byte(secret)) == 1 {
		return NewAuthorizer("agent-recovery:"+r.cfg.NodeName, []*Rules{agentRecoveryRules(r.cfg.NodeName)}, "deny")
	}
	tok, ok := s.ACLTokenBySecret(secret)
	if !ok {
		if secret == AnonymousSecret {
			// Before the leader has written it, the anonymous token is one
			// with no policies, as Consul synthesizes it.
			return NewAuthorizer(AnonymousAccessorID, nil, r.cfg.Policy())
		}
		if s.ACLBootstrapIndex() == 0 {
			return nil, notBootstrapped()
		}
		return nil, ErrNotFound
	}
	policies, err := r.policiesOf(s, tok)
	if err != nil {
		return nil, err
	}
	return NewAuthorizer(tok.AccessorID, policies, r.cfg.Policy())
}

func (r *Resolver) recovery() string {
	if r.cfg.AgentRecovery == nil {
		return ""
	}
	return r.cfg.AgentRecovery()
}

// policiesOf gathers the rules a token carries in a fixed order: its own
// policies, then each role's policies, then the identities of the token and
// of its roles. Links to deleted policies or roles are skipped, as are
// policies and identities limited to other datacenters.
func (r *Resolver) policiesOf(s *model.State, tok model.ACLToken) ([]*Rules, error) {
	var (
		out      []*Rules
		seen     []string
		services []model.ACLServiceIdentity
		nodes    []model.ACLNodeIdentity
	)
	addPolicy := func(id string) error {
		if slices.Contains(seen, id) {
			return nil
		}
		seen = append(seen, id)
		p, ok := s.ACLPolicy(id)
		if !ok || !r.inDatacenter(p.Datacenters) {
			return nil
		}
		rules, err := r.parsed(p)
		if err != nil {
			return err
		}
		out = append(out, rules)
		return nil
	}
	for _, id := range tok.Policies {
		if err := addPolicy(id); err != nil {
			return nil, err
		}
	}
	services = append(services, tok.ServiceIdentities...)
	nodes = append(nodes, tok.NodeIdentities...)
	for _, rid := range tok.Roles {
		role, ok := s.ACLRole(rid)
		if !ok {
			continue
		}
		for _, id := range role.Policies {
			if err := addPolicy(id); err != nil {
				return nil, err
			}
		}
		services = append(services, role.ServiceIdentities...)
		nodes = append(nodes, role.NodeIdentities...)
	}
	for _, id := range services {
		if r.inDatacenter(id.Datacenters) {
			out = append(out, serviceIdentityRules(id.ServiceName))
		}
	}
	for _, id := range nodes {
		if id.Datacenter == r.cfg.Datacenter {
			out = append(out, nodeIdentityRules(id.NodeName))
		}
	}
	return out, nil
}

// inDatacenter reports whether a record limited to dcs (none: every one)
// applies on this agent.
func (r *Resolver) inDatacenter(dcs []string) bool {
	return len(dcs) == 0 || slices.Contains(dcs, r.cfg.Datacenter)
}

// parsed returns a stored policy's rules, parsed once per text. The
// parsed rules are shared and never changed (Merge copies).
func (r *Resolver) parsed(p model.ACLPolicy) (*Rules, error) {
	key := p.Rules
	r.mu.Lock()
	rules, ok := r.rules[key]
	r.mu.Unlock()
	if ok {
		return rules, nil
	}
	rules, err := ParseStored(p.Rules)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.ID, err)
	}
	r.mu.Lock()
	if len(r.rules) >= maxCachedRules {
		clear(r.rules)
	}
	r.rules[key] = rules
	r.mu.Unlock()
	return rules, nil
}
