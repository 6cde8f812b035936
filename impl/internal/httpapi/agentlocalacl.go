package httpapi

import (
	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// The agent-local endpoints under ACLs (S90), decided as Consul's agent
// decides them: a check is written with service:write on its service, or
// node:write on the agent's node for a node check, and so is one it
// replaces; a service with service:write on its name (and on the one it
// replaces, and on a proxy's destination); node maintenance needs
// node:write; the lists keep what service:read (node:read on the agent's
// node for node checks) allows. Every decision goes through
// localHandler.authorize: over the replicated tables on a server, asked of
// a server on a client agent.

// allowed decides one permission for c; nil with ACLs off.
func (h *localHandler) allowed(c *call, r acl.Resource, name string, need acl.Access) error {
	if !h.acl.enabled() || h.authorize == nil {
		return nil
	}
	return aclFailure(h.authorize(c.r, r, name, need))
}

// tokenKnown is 403 if c's token is unknown (Consul resolves it before it
// validates most of a body), and nil otherwise, whatever it may do.
func (h *localHandler) tokenKnown(c *call) error {
	_, err := h.may(c, acl.ResourceNode, h.node, acl.AccessRead)
	return err
}

// may is allowed for a filter: a denial is false, any other failure (an
// unknown token) is the answer.
func (h *localHandler) may(c *call, r acl.Resource, name string, need acl.Access) (bool, error) {
	if !h.acl.enabled() || h.authorize == nil {
		return true, nil
	}
	return allowedOrFailure(h.authorize(c.r, r, name, need))
}

// mayAll decides may for every entry of a list at once (decideAll), for
// readableOf.
func (h *localHandler) mayAll(c *call) func([]Permission) ([]bool, error) {
	return func(ps []Permission) ([]bool, error) {
		if !h.acl.enabled() || h.authorize == nil {
			return allAllowed(len(ps)), nil
		}
		return decideAll(c.r, ps, h.authorize, h.authorizeAll)
	}
}

// secret is the token c is decided with (S86): its own, else the agent's
// default token as it is now, else "". A registration keeps it, and
// anti-entropy writes the registration with it (CONSUL.md §24), as Consul's
// agent keeps the token its parseToken gave.
func (h *localHandler) secret(c *call) string {
	if o, ok := rpc.OriginFrom(c.r.Context()); ok {
		return o.Token
	}
	return acl.EffectiveSecret(c.query(), c.r.Header, h.acl.Tokens.Get(TokenDefault))
}

// tellFiltered is whether a local list that dropped entries says so:
// Consul's agent tells any request with a token, its own or the agent's
// default, even the anonymous one named outright (the servers' rule,
// handler.maskFiltered, also hides it from that one).
func (h *localHandler) tellFiltered(c *call) bool {
	return h.acl.enabled() && h.secret(c) != ""
}

// setFiltered sets the filtered header when dropped and the caller is told.
func (h *localHandler) setFiltered(c *call, dropped bool) {
	if dropped && h.tellFiltered(c) {
		c.w.Header().Set(filteredHeader, "true")
	}
}

// checkWritable decides a write on the local check id as it is: its
// service's service:write, or node:write for a node check. An unknown check
// is left to the operation, which answers 404.
func (h *localHandler) checkWritable(c *call, id string) error {
	ch, ok := h.la.State().Check(id)
	if !ok {
		return nil
	}
	return h.checkWriteOn(c, ch.ServiceName)
}

// checkWriteOn is the permission a check of service (a node check when "")
// needs.
func (h *localHandler) checkWriteOn(c *call, service string) error {
	if service != "" {
		return h.allowed(c, acl.ResourceService, service, acl.AccessWrite)
	}
	return h.allowed(c, acl.ResourceNode, h.node, acl.AccessWrite)
}

// vetCheckRegister decides a check registration in Consul's order: a
// missing name or an unknown status is 400 whatever the token; then an
// unknown token is 403; then the rest of the definition's validation
// (400) and an unknown service (404, which the registration answers)
// come before the decision on the permissions (403).
func (h *localHandler) vetCheckRegister(c *call, def checks.Definition) error {
	if !h.acl.enabled() {
		return nil
	}
	if err := checks.Preflight(def); err != nil {
		return refusal(err)
	}
	// Validated with scripts allowed: a script refusal comes after the
	// ACL decision, from the registration itself.
	d, err := checks.Prepare(def, checks.Remote, checks.Policy{EnableScriptChecks: true})
	if err != nil {
		if terr := h.tokenKnown(c); terr != nil {
			return terr
		}
		return refusal(err)
	}
	service := ""
	if d.ServiceID != "" {
		svc, ok := h.la.State().Service(d.ServiceID)
		if !ok {
			return h.tokenKnown(c) // else the registration answers 404
		}
		service = svc.Service
	}
	if err := h.checkWriteOn(c, service); err != nil {
		return err
	}
	return h.checkWritable(c, d.ID)
}

// vetServiceRegister decides a service registration: service:write on its
// name, on the service it replaces by ID, and on a connect proxy's
// destination. A registration without a name is left to its 400.
func (h *localHandler) vetServiceRegister(c *call, def local.ServiceDefinition) error {
	if !h.acl.enabled() || def.Name == "" {
		return nil
	}
	if err := h.allowed(c, acl.ResourceService, def.Name, acl.AccessWrite); err != nil {
		return err
	}
	id := def.ID
	if id == "" {
		id = def.Name
	}
	if old, ok := h.la.State().Service(id); ok {
		if err := h.allowed(c, acl.ResourceService, old.Service, acl.AccessWrite); err != nil {
			return err
		}
	}
	if def.Kind == catalogwire.KindConnectProxy && def.Proxy != nil {
		return h.allowed(c, acl.ResourceService, def.Proxy.DestinationServiceName, acl.AccessWrite)
	}
	return nil
}

// serviceWritable decides a change to the local service id (deregister,
// maintenance): service:write on its name. An unknown one is left to the
// operation's 404.
func (h *localHandler) serviceWritable(c *call, id string) error {
	svc, ok := h.la.State().Service(id)
	if !ok {
		return nil
	}
	return h.allowed(c, acl.ResourceService, svc.Service, acl.AccessWrite)
}
