package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/tenurekv/tenure/acl"
)

// The agent-scope and operator endpoints under ACLs (S90), as Consul's
// agent and servers decide them: /v1/agent/self, metrics and monitor need
// agent:read on the agent's node; join, leave and reload agent:write;
// force-leave operator:write; /v1/agent/host, the raft configuration and
// the autopilot configuration operator:read; removing a raft peer
// operator:write; listing the gossip keyring keyring:read and changing it
// keyring:write. /v1/agent/members keeps the members whose node the caller
// may read. /v1/status/* is open, as in Consul.

// agentNode is the node of the agent that answers c.
func (h *handler) agentNode(c *call) string {
	if h.b == nil {
		return h.opts.Node
	}
	return h.origin(c)
}

// agentAllowed decides a permission for an endpoint the agent answers
// itself: through Options.Authorize on a client agent (it asks a server),
// over the replicated tables on a server. nil with ACLs off.
func (h *handler) agentAllowed(c *call, r acl.Resource, name string, need acl.Access) error {
	if !h.opts.ACL.enabled() {
		return nil
	}
	if h.opts.Authorize != nil {
		return aclFailure(h.opts.Authorize(c.r, r, name, need))
	}
	return h.allowed(c, r, name, need)
}

// agentMayAll decides agentAllowed for every entry of a list, at once on a
// client agent (decideAll), for readableOf: a denial is false, any other
// failure (an unknown token) is the answer.
func (h *handler) agentMayAll(c *call) func([]Permission) ([]bool, error) {
	return func(ps []Permission) ([]bool, error) {
		if !h.opts.ACL.enabled() {
			return allAllowed(len(ps)), nil
		}
		if h.opts.Authorize != nil {
			return decideAll(c.r, ps, h.opts.Authorize, h.opts.AuthorizeAll)
		}
		return decideAll(c.r, ps, func(r *http.Request, res acl.Resource, name string, need acl.Access) error {
			return h.allowed(&call{r: r}, res, name, need)
		}, nil)
	}
}

// allowedOrFailure reads a decision for a filter: nil is true, a
// permission denial (as such or as the 403 that answers it) false, and
// anything else, such as an unknown token, is the failure to answer with.
func allowedOrFailure(err error) (bool, error) {
	var ae *apiError
	switch {
	case err == nil:
		return true, nil
	case acl.IsPermissionDenied(err):
		return false, nil
	case errors.As(err, &ae) && ae.status == http.StatusForbidden && strings.HasPrefix(ae.msg, "Permission denied"):
		return false, nil
	}
	return false, aclFailure(err)
}

// tellsFiltered is Consul's rule for lists an agent answers itself: the
// filtered header goes to any request with a token, its own or the
// agent's default.
func (h *handler) tellsFiltered(c *call) bool {
	return acl.EffectiveSecret(c.query(), c.r.Header, h.opts.ACL.Tokens.Get(TokenDefault)) != ""
}

// keyringAllowed decides a keyring operation after its body decodes, as
// Consul decodes first: a list needs keyring:read, a change keyring:write.
// A body that does not decode is left to the handler's 400.
func (h *handler) keyringAllowed(c *call) error {
	if !h.opts.ACL.enabled() {
		return nil
	}
	if c.r.Method == http.MethodGet {
		return h.agentAllowed(c, acl.ResourceKeyring, "", acl.AccessRead)
	}
	b, err := readBody(c, maxJSONBody, bodyTooLarge)
	if err != nil {
		return err
	}
	// The handler reads the body again.
	c.r.Body = http.NoBody
	if len(b) > 0 {
		c.r.Body = readCloser{bytes.NewReader(b)}
	}
	c.r.ContentLength = int64(len(b))
	var probe struct{ Key string }
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&probe) != nil {
		return nil
	}
	return h.agentAllowed(c, acl.ResourceKeyring, "", acl.AccessWrite)
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
