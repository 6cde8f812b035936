package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/hashicorp/go-uuid"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// The ACL endpoints (S87), in Consul's shapes and with its texts. Reads need
// acl:read, writes acl:write, both decided on the state the request is
// served from; a token reads itself without either. A refused write
// answers 400 with Consul's reason (Consul answers 500; Options.Compat
// does too) and changes nothing (S88).

func (h *handler) aclRoutes() []route {
	return []route{
		{"/v1/acl/bootstrap", false, []string{put}, h.aclBootstrap},
		{"/v1/acl/replication", false, []string{get}, h.aclReplication},
		{"/v1/acl/token", false, []string{put}, h.aclTokenCreate},
		{"/v1/acl/token/self", false, []string{get}, h.aclTokenSelf},
		{"/v1/acl/token/", true, []string{get, put, del}, h.aclToken},
		{"/v1/acl/tokens", false, []string{get}, h.aclTokenList},
		{"/v1/acl/policy", false, []string{put}, h.aclPolicyCreate},
		{"/v1/acl/policy/name/", true, []string{get}, h.aclPolicyByName},
		{"/v1/acl/policy/", true, []string{get, put, del}, h.aclPolicy},
		{"/v1/acl/policies", false, []string{get}, h.aclPolicyList},
		{"/v1/acl/role", false, []string{put}, h.aclRoleCreate},
		{"/v1/acl/role/name/", true, []string{get}, h.aclRoleByName},
		{"/v1/acl/role/", true, []string{get, put, del}, h.aclRole},
		{"/v1/acl/roles", false, []string{get}, h.aclRoleList},
		{"/v1/internal/acl/authorize", false, []string{post}, h.aclAuthorize},
	}
}

// maxACLBody bounds an ACL request body: a policy's rules at their limit,
// JSON-escaped, fit.
const maxACLBody = 4 * model.MaxACLRulesLen

// maxAuthorizations is Consul's bound on one authorize request.
const maxAuthorizations = 64

// aclOn refuses an ACL endpoint on an agent with ACLs off, as Consul does.
func (h *handler) aclOn() error {
	if !h.opts.ACL.enabled() {
		return errorf(http.StatusUnauthorized, "%s", acl.ErrDisabled)
	}
	return nil
}

// invalid is a refused ACL write: 400 with the reason, or Consul's 500
// under Options.Compat (S88).
func (h *handler) invalid(format string, args ...any) error {
	return h.rejection(&model.Error{Kind: model.ErrInvalid, Msg: fmt.Sprintf(format, args...)})
}

// aclBody reads an ACL write's body within its bound.
func aclBody(c *call) ([]byte, error) {
	return readBody(c, maxACLBody, bodyOver(maxACLBody))
}

// aclRead serves an ACL read that needs acl:read: the permission is
// decided on the state the read is served from.
func (h *handler) aclRead(c *call, read func(s *model.State, a *acl.Authorizer) view) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err == nil {
			err = aclFailure(a.Check(acl.ResourceACL, "", acl.AccessRead))
		}
		if err != nil {
			return view{fail: err}
		}
		return read(s, a)
	})
}

// aclWrite runs a write that needs acl:write on the leader: check, then
// build the command from the current state (names resolve to IDs there),
// then apply. done reports that the request was forwarded and its answer
// written; otherwise it returns the applied result or the answer to send.
func (h *handler) aclWrite(c *call, body []byte, build func(s *model.State, a *acl.Authorizer) (*model.ACLOp, error)) (res model.Result, done bool, err error) {
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return model.Result{}, err == nil, err
	}
	var (
		op      *model.ACLOp
		refusal *model.Error
	)
	h.b.Read(func(s *model.State) {
		var a *acl.Authorizer
		if a, err = h.authz(c, s); err != nil {
			return
		}
		if err = aclFailure(a.Check(acl.ResourceACL, "", acl.AccessWrite)); err != nil {
			return
		}
		if op, err = build(s, a); err != nil {
			return
		}
		// A write the state refuses is answered without a log entry.
		refusal = s.CheckACL(*op)
	})
	if err != nil {
		return model.Result{}, false, err
	}
	if refusal != nil {
		return model.Result{Err: refusal}, false, nil
	}
	res, err = h.b.Apply(c.r.Context(), model.Command{ACL: op})
	if err != nil {
		return model.Result{}, false, h.applyFailure(err)
	}
	return res, false, nil
}

// aclReplication is GET /v1/acl/replication: one datacenter never
// replicates.
func (h *handler) aclReplication(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]any{
		"Enabled": false, "Running": false, "SourceDatacenter": "", "ReplicationType": "",
		"ReplicatedIndex": 0, "ReplicatedRoleIndex": 0, "ReplicatedTokenIndex": 0,
		"LastSuccess": "0001-01-01T00:00:00Z", "LastError": "0001-01-01T00:00:00Z", "LastErrorMessage": "",
	})
}

// aclBootstrap is PUT /v1/acl/bootstrap: the first management token, once
// (S87). After a bootstrap it is refused with the index an operator writes
// to <data_dir>/acl-bootstrap-reset to allow one more; the file is removed
// once read, so a reset allows exactly one.
func (h *handler) aclBootstrap(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	body, err := aclBody(c)
	if err != nil {
		return err
	}
	var in struct{ BootstrapSecret string }
	if len(body) > 0 {
		if err := decodeStrict(body, &in); err != nil {
			return errorf(http.StatusBadRequest, "Request decoding failed: %v", err)
		}
	}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	var done uint64
	h.b.Read(func(s *model.State) { done = s.ACLBootstrapIndex() })
	var reset uint64
	if done != 0 {
		reset = h.bootstrapResetIndex()
		switch {
		case reset == 0:
			return bootstrapRefused(fmt.Sprintf("ACL bootstrap no longer allowed (reset index: %d)", done))
		case reset != done:
			return h.invalid("Invalid bootstrap reset index (specified %d, reset index: %d)", reset, done)
		}
		// Read and valid: it allows this one bootstrap only.
		if err := os.Remove(h.opts.ACL.BootstrapResetFile); err != nil {
			h.opts.Logger.Warn("removing the ACL bootstrap reset file failed", "error", err)
		}
	}
	if in.BootstrapSecret != "" {
		if _, err := uuid.ParseUUID(in.BootstrapSecret); err != nil {
			return h.invalid("%v", err)
		}
		var taken bool
		h.b.Read(func(s *model.State) { _, taken = s.ACLTokenBySecret(in.BootstrapSecret) })
		if taken {
			return h.invalid("Provided token cannot be used because a token with that secret already exists.")
		}
	}
	tok := &model.ACLToken{SecretID: in.BootstrapSecret, Description: acl.BootstrapDescription,
		Policies: []string{model.GlobalManagementPolicyID}}
	res, err := h.b.Apply(c.r.Context(), model.Command{ACL: &model.ACLOp{Verb: model.ACLBootstrap, Token: tok, ResetIndex: reset}})
	if err != nil {
		return h.applyFailure(err)
	}
	if res.Err != nil {
		if strings.Contains(res.Err.Msg, "ACL bootstrap no longer allowed") {
			return bootstrapRefused(res.Err.Msg)
		}
		return h.rejection(res.Err)
	}
	var out aclBootstrapJSON
	h.b.Read(func(s *model.State) {
		t, _ := s.ACLToken(res.ACLID)
		out = aclBootstrapJSON{ID: t.SecretID, aclTokenJSON: toToken(s, t, false)}
	})
	return writeJSON(c, http.StatusOK, out)
}

func bootstrapRefused(cause string) error {
	return &apiError{status: http.StatusForbidden, msg: (&acl.PermissionDenied{Cause: cause}).Error()}
}

// bootstrapResetIndex reads the reset file; 0 if there is none or it does
// not hold a number, as Consul reads it.
func (h *handler) bootstrapResetIndex() uint64 {
	path := h.opts.ACL.BootstrapResetFile
	if path == "" {
		return 0
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var n uint64
	if _, err := fmt.Sscanf(string(data), "%d", &n); err != nil {
		return 0
	}
	return n
}

// aclTokenSelf is GET /v1/acl/token/self: the caller's own token, which
// any token may read.
func (h *handler) aclTokenSelf(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	secret := h.secret(c)
	return h.serveRead(c, q, func(s *model.State) view {
		t, ok := s.ACLTokenBySecret(secret)
		if !ok {
			return view{fail: aclFailure(fmt.Errorf("token does not exist: %w", acl.ErrNotFound))}
		}
		return view{index: s.Tables().ACLTokens, body: toToken(s, t, false)}
	})
}

// aclToken is GET, PUT and DELETE /v1/acl/token/<accessor>, and PUT
// /v1/acl/token/<accessor>/clone.
func (h *handler) aclToken(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	id := c.arg
	if strings.HasSuffix(id, "/clone") && c.r.Method == http.MethodPut {
		return h.aclTokenClone(c, strings.TrimSuffix(id, "/clone"))
	}
	if id == "" && c.r.Method != http.MethodPut {
		return errorf(http.StatusBadRequest, "Missing token AccessorID")
	}
	switch c.r.Method {
	case http.MethodGet:
		if !validUUID(id) {
			return h.invalid("Invalid token AccessorID %q: not a UUID", id)
		}
		return h.aclRead(c, func(s *model.State, a *acl.Authorizer) view {
			t, ok := s.ACLToken(id)
			if !ok {
				return view{fail: aclFailure(fmt.Errorf("token does not exist: %w", acl.ErrNotFound))}
			}
			return view{index: s.Tables().ACLTokens, body: toToken(s, t, !a.Allowed(acl.ResourceACL, "", acl.AccessWrite))}
		})
	case http.MethodPut:
		return h.aclTokenWrite(c, id, false)
	}
	return h.aclTokenDelete(c, id)
}

// aclTokenList is GET /v1/acl/tokens, optionally only the tokens that link
// ?policy, ?role, or carry the service identity ?servicename.
func (h *handler) aclTokenList(c *call) error {
	v := c.query()
	filters := 0
	for _, f := range []string{"policy", "role", "authmethod", "servicename"} {
		if v.Get(f) != "" {
			filters++
		}
	}
	if filters > 1 {
		return h.invalid("can only filter by one of policy, role, serviceName, or methodName at a time")
	}
	policy, role, method, service := v.Get("policy"), v.Get("role"), v.Get("authmethod"), v.Get("servicename")
	return h.aclRead(c, func(s *model.State, a *acl.Authorizer) view {
		redact := !a.Allowed(acl.ResourceACL, "", acl.AccessWrite)
		out := []aclTokenJSON{}
		for _, t := range s.ACLTokenList() {
			switch {
			case method != "": // tokens from auth methods: tenure has none
				continue
			case policy != "" && !containsString(t.Policies, policy),
				role != "" && !containsString(t.Roles, role),
				service != "" && !hasServiceIdentity(t.ServiceIdentities, service):
				continue
			}
			out = append(out, toToken(s, t, redact))
		}
		return view{index: s.Tables().ACLTokens, body: out}
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasServiceIdentity(ids []model.ACLServiceIdentity, name string) bool {
	for _, id := range ids {
		if id.ServiceName == name {
			return true
		}
	}
	return false
}

// aclTokenCreate is PUT /v1/acl/token.
func (h *handler) aclTokenCreate(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	return h.aclTokenWrite(c, "", true)
}

// aclTokenWrite creates a token, or updates the one urlID names.
func (h *handler) aclTokenWrite(c *call, urlID string, create bool) error {
	body, err := aclBody(c)
	if err != nil {
		return err
	}
	var in aclTokenIn
	if err := decodeStrict(body, &in); err != nil {
		return errorf(http.StatusBadRequest, "Token decoding failed: %v", err)
	}
	if !create {
		if in.AccessorID == "" {
			in.AccessorID = urlID
		}
		if in.AccessorID != urlID {
			return errorf(http.StatusBadRequest, "Token Accessor ID in URL and payload do not match")
		}
	}
	if err := h.checkTokenIn(&in, create); err != nil {
		return err
	}
	res, done, err := h.aclWrite(c, body, func(s *model.State, _ *acl.Authorizer) (*model.ACLOp, error) {
		tok, err := h.tokenFromIn(s, in)
		if err != nil {
			return nil, err
		}
		return &model.ACLOp{Verb: model.ACLTokenSet, Create: create, Token: tok}, nil
	})
	if done || err != nil {
		return err
	}
	return h.answerToken(c, res)
}

// checkTokenIn refuses what can be refused without the state.
func (h *handler) checkTokenIn(in *aclTokenIn, create bool) error {
	switch {
	case len(in.TemplatedPolicies) > 0:
		return h.invalid("Templated policies are not supported by tenure")
	case in.ExpirationTime != nil || (len(in.ExpirationTTL) > 0 && string(in.ExpirationTTL) != "0" && string(in.ExpirationTTL) != `""` && string(in.ExpirationTTL) != "null"):
		return h.invalid("Token expiration is not supported by tenure")
	case in.AuthMethod != "":
		return h.invalid("AuthMethod field is disallowed outside of login")
	case len(in.Policies) > model.MaxACLLinks || len(in.Roles) > model.MaxACLLinks ||
		len(in.ServiceIdentities) > model.MaxACLLinks || len(in.NodeIdentities) > model.MaxACLLinks:
		return errorf(http.StatusRequestEntityTooLarge, "A token links at most %d policies, %d roles and %d identities of each kind", model.MaxACLLinks, model.MaxACLLinks, model.MaxACLLinks)
	}
	if create {
		if in.AccessorID != "" {
			if err := h.checkNewTokenID("AccessorID", in.AccessorID); err != nil {
				return err
			}
		}
		if in.SecretID != "" {
			if err := h.checkNewTokenID("SecretID", in.SecretID); err != nil {
				return err
			}
		}
	} else if !validUUID(in.AccessorID) {
		return h.invalid("AccessorID is not a valid UUID")
	}
	return h.checkIdentities(in.ServiceIdentities, in.NodeIdentities, "token")
}

func (h *handler) checkNewTokenID(field, id string) error {
	if strings.HasPrefix(id, reservedACLPrefix) {
		return h.invalid("Invalid Token: %s - UUIDs with the prefix %q are reserved", field, reservedACLPrefix)
	}
	if !validUUID(id) {
		return h.invalid("Invalid Token: %s - not a valid UUID", field)
	}
	return nil
}

// reservedACLPrefix starts the IDs of Consul's builtin records.
const reservedACLPrefix = "00000000-0000-0000-0000-0000000000"

var identityName = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$`)

func validIdentityName(name string) bool {
	return len(name) >= 1 && len(name) <= 256 && identityName.MatchString(name)
}

// checkIdentities refuses identities Consul refuses, with its texts; what
// is "token" or "role".
func (h *handler) checkIdentities(svc []aclServiceIdentityJSON, nodes []aclNodeIdentityJSON, what string) error {
	for _, id := range svc {
		switch {
		case id.ServiceName == "":
			return h.invalid("Service identity is missing the service name field on this %s", what)
		case !validIdentityName(id.ServiceName):
			return h.invalid("Service identity %q has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed", id.ServiceName)
		case len(id.Datacenters) > model.MaxACLLinks:
			return errorf(http.StatusRequestEntityTooLarge, "A service identity names at most %d datacenters", model.MaxACLLinks)
		}
	}
	for _, id := range nodes {
		switch {
		case id.NodeName == "":
			return h.invalid("Node identity is missing the node name field on this %s", what)
		case id.Datacenter == "":
			return h.invalid("Node identity is missing the datacenter field on this %s", what)
		case !validIdentityName(id.NodeName):
			return h.invalid("Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed")
		}
	}
	return nil
}

// tokenFromIn builds the stored token, its links resolved to IDs on s.
func (h *handler) tokenFromIn(s *model.State, in aclTokenIn) (*model.ACLToken, error) {
	policies, err := h.policyIDs(s, in.Policies)
	if err != nil {
		return nil, err
	}
	roles, err := h.roleIDs(s, in.Roles)
	if err != nil {
		return nil, err
	}
	t := &model.ACLToken{AccessorID: in.AccessorID, SecretID: in.SecretID, Description: in.Description,
		Policies: policies, Roles: roles, Local: in.Local}
	for _, id := range in.ServiceIdentities {
		t.ServiceIdentities = append(t.ServiceIdentities, model.ACLServiceIdentity{ServiceName: id.ServiceName, Datacenters: id.Datacenters})
	}
	for _, id := range in.NodeIdentities {
		t.NodeIdentities = append(t.NodeIdentities, model.ACLNodeIdentity{NodeName: id.NodeName, Datacenter: id.Datacenter})
	}
	return t, nil
}

// policyIDs resolves links by ID or name to IDs, with Consul's texts for
// links to nothing; repeats are dropped by the model.
func (h *handler) policyIDs(s *model.State, links []aclLinkJSON) ([]string, error) {
	var out []string
	for _, l := range links {
		if l.ID == "" {
			p, ok := s.ACLPolicyByName(l.Name)
			if !ok {
				return nil, h.invalid("No such ACL policy with name %q", l.Name)
			}
			l.ID = p.ID
		} else if _, ok := s.ACLPolicy(l.ID); !ok {
			return nil, h.invalid("No such ACL policy with ID %q", l.ID)
		}
		out = append(out, l.ID)
	}
	return out, nil
}

func (h *handler) roleIDs(s *model.State, links []aclLinkJSON) ([]string, error) {
	var out []string
	for _, l := range links {
		if l.ID == "" {
			r, ok := s.ACLRoleByName(l.Name)
			if !ok {
				return nil, h.invalid("No such ACL role with name %q", l.Name)
			}
			l.ID = r.ID
		} else if _, ok := s.ACLRole(l.ID); !ok {
			return nil, h.invalid("No such ACL role with ID %q", l.ID)
		}
		out = append(out, l.ID)
	}
	return out, nil
}

// answerToken answers a token write with the token as stored.
func (h *handler) answerToken(c *call, res model.Result) error {
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	var out aclTokenJSON
	h.b.Read(func(s *model.State) {
		t, _ := s.ACLToken(res.ACLID)
		out = toToken(s, t, false)
	})
	return writeJSON(c, http.StatusOK, out)
}

// aclTokenClone is PUT /v1/acl/token/<accessor>/clone: a new token with
// the same links, and the body's Description if it has one.
func (h *handler) aclTokenClone(c *call, id string) error {
	body, err := aclBody(c)
	if err != nil {
		return err
	}
	var in aclTokenIn
	if err := decodeStrict(body, &in); err != nil {
		return errorf(http.StatusBadRequest, "Token decoding failed: %v", err)
	}
	res, done, err := h.aclWrite(c, body, func(s *model.State, _ *acl.Authorizer) (*model.ACLOp, error) {
		src, ok := s.ACLToken(id)
		if !ok {
			return nil, aclFailure(fmt.Errorf("token does not exist: %w", acl.ErrNotFound))
		}
		clone := &model.ACLToken{Description: src.Description, Policies: src.Policies, Roles: src.Roles,
			ServiceIdentities: src.ServiceIdentities, NodeIdentities: src.NodeIdentities, Local: src.Local}
		if in.Description != "" {
			clone.Description = in.Description
		}
		return &model.ACLOp{Verb: model.ACLTokenSet, Create: true, Token: clone}, nil
	})
	if done || err != nil {
		return err
	}
	return h.answerToken(c, res)
}

// aclTokenDelete is DELETE /v1/acl/token/<accessor>: true.
func (h *handler) aclTokenDelete(c *call, id string) error {
	if !validUUID(id) {
		return h.invalid("Accessor ID is missing or an invalid UUID")
	}
	secret := h.secret(c)
	res, done, err := h.aclWrite(c, nil, func(s *model.State, _ *acl.Authorizer) (*model.ACLOp, error) {
		if t, ok := s.ACLToken(id); ok && t.SecretID == secret {
			return nil, h.invalid("Deletion of the request's authorization token is not permitted")
		}
		return &model.ACLOp{Verb: model.ACLTokenDelete, ID: id}, nil
	})
	if done || err != nil {
		return err
	}
	if res.Err != nil {
		if res.Err.Kind == model.ErrMissing {
			return errorf(http.StatusNotFound, "%s", res.Err.Msg)
		}
		return h.rejection(res.Err)
	}
	return writeJSON(c, http.StatusOK, true)
}

// Policies.

// policyName is Consul's check of a policy's name.
var policyName = regexp.MustCompile(`^[A-Za-z0-9\-_]+/?[A-Za-z0-9\-_]*$`)

func (h *handler) checkPolicyName(name string) error {
	switch {
	case name == "":
		return h.invalid("Invalid Policy: no Name is set")
	case len(name) > 128:
		return h.invalid("Invalid Policy: invalid Name. Length must be greater than 0 and less than 128")
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, "builtin/"):
		return h.invalid("Invalid Policy: invalid Name. Names cannot be prefixed with '/' or 'builtin/'")
	case !policyName.MatchString(name):
		return h.invalid("Invalid Policy: invalid Name. Only alphanumeric characters, a single '/', '-' and '_' are allowed")
	}
	return nil
}

// aclPolicyCreate is PUT /v1/acl/policy.
func (h *handler) aclPolicyCreate(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	return h.aclPolicyWrite(c, "", true)
}

// aclPolicy is GET, PUT and DELETE /v1/acl/policy/<id>.
func (h *handler) aclPolicy(c *call) error { return h.aclRecord(c, policies) }

// aclTable is what the policy and role endpoints differ in: the record's
// name in Consul's texts, its lookups and JSON, its table's index, its
// delete verb and its write.
type aclTable struct {
	name   string
	byID   func(s *model.State, id string) (any, bool)
	byName func(s *model.State, name string) (any, bool)
	index  func(s *model.State) uint64
	del    model.ACLVerb
	write  func(h *handler, c *call, urlID string, create bool) error
}

var (
	policies = aclTable{
		name: "policy",
		byID: func(s *model.State, id string) (any, bool) {
			p, ok := s.ACLPolicy(id)
			return toPolicy(p), ok
		},
		byName: func(s *model.State, name string) (any, bool) {
			p, ok := s.ACLPolicyByName(name)
			return toPolicy(p), ok
		},
		index: func(s *model.State) uint64 { return s.Tables().ACLPolicies },
		del:   model.ACLPolicyDelete,
		write: (*handler).aclPolicyWrite,
	}
	roles = aclTable{
		name: "role",
		byID: func(s *model.State, id string) (any, bool) {
			r, ok := s.ACLRole(id)
			return toRole(s, r), ok
		},
		byName: func(s *model.State, name string) (any, bool) {
			r, ok := s.ACLRoleByName(name)
			return toRole(s, r), ok
		},
		index: func(s *model.State) uint64 { return s.Tables().ACLRoles },
		del:   model.ACLRoleDelete,
		write: (*handler).aclRoleWrite,
	}
)

// aclRecord is GET, PUT and DELETE of the policy or role c's path names by
// ID.
func (h *handler) aclRecord(c *call, t aclTable) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	id := c.arg
	if id == "" && c.r.Method != http.MethodPut {
		return errorf(http.StatusBadRequest, "Missing %s ID", t.name)
	}
	if c.r.Method == http.MethodPut {
		return t.write(h, c, id, false)
	}
	if !validUUID(id) {
		return h.invalid("Invalid %s ID %q: not a UUID", t.name, id)
	}
	if c.r.Method == http.MethodGet {
		return h.aclRead(c, func(s *model.State, _ *acl.Authorizer) view {
			return t.view(s, t.byID, id)
		})
	}
	res, done, err := h.aclWrite(c, nil, func(*model.State, *acl.Authorizer) (*model.ACLOp, error) {
		return &model.ACLOp{Verb: t.del, ID: id}, nil
	})
	if done || err != nil {
		return err
	}
	return h.deleted(c, res)
}

// aclRecordByName is GET of the policy or role c's path names by name.
func (h *handler) aclRecordByName(c *call, t aclTable) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing %s Name", t.name)
	}
	return h.aclRead(c, func(s *model.State, _ *acl.Authorizer) view {
		return t.view(s, t.byName, c.arg)
	})
}

// view answers one record found by lookup, or Consul's 404.
func (t aclTable) view(s *model.State, lookup func(*model.State, string) (any, bool), key string) view {
	body, ok := lookup(s, key)
	if !ok {
		return view{fail: errorf(http.StatusNotFound, "Requested %s does not exist: %s", t.name, acl.ErrNotFound)}
	}
	return view{index: t.index(s), body: body}
}

// deleted answers a delete: true, 404 for a record that is not there.
func (h *handler) deleted(c *call, res model.Result) error {
	if res.Err != nil {
		if res.Err.Kind == model.ErrMissing {
			return errorf(http.StatusNotFound, "%s", res.Err.Msg)
		}
		return h.rejection(res.Err)
	}
	return writeJSON(c, http.StatusOK, true)
}

// aclPolicyByName is GET /v1/acl/policy/name/<name>.
func (h *handler) aclPolicyByName(c *call) error { return h.aclRecordByName(c, policies) }

// aclPolicyList is GET /v1/acl/policies.
func (h *handler) aclPolicyList(c *call) error {
	return h.aclRead(c, func(s *model.State, _ *acl.Authorizer) view {
		out := []aclPolicyListJSON{}
		for _, p := range s.ACLPolicyList() {
			out = append(out, toPolicyListEntry(p))
		}
		return view{index: s.Tables().ACLPolicies, body: out}
	})
}

// aclPolicyWrite creates a policy, or updates the one urlID names. Rules
// that do not parse are refused with Consul's text and change nothing
// (S88).
func (h *handler) aclPolicyWrite(c *call, urlID string, create bool) error {
	body, err := aclBody(c)
	if err != nil {
		return err
	}
	var in aclPolicyIn
	if err := decodeStrict(body, &in); err != nil {
		return errorf(http.StatusBadRequest, "Policy decoding failed: %v", err)
	}
	if create && in.ID != "" {
		return errorf(http.StatusBadRequest, "Cannot specify the ID when creating a new policy")
	}
	if !create {
		if in.ID == "" {
			in.ID = urlID
		}
		if in.ID != urlID {
			return errorf(http.StatusBadRequest, "Policy ID in URL and payload do not match")
		}
	}
	if err := h.checkPolicyName(in.Name); err != nil {
		return err
	}
	if !create && !validUUID(in.ID) {
		return h.invalid("Policy ID invalid UUID")
	}
	if len(in.Datacenters) > model.MaxACLLinks {
		return errorf(http.StatusRequestEntityTooLarge, "A policy names at most %d datacenters", model.MaxACLLinks)
	}
	if len(in.Rules) > model.MaxACLRulesLen {
		return errorf(http.StatusRequestEntityTooLarge, "Rules of %d bytes exceed the limit of %d", len(in.Rules), model.MaxACLRulesLen)
	}
	if _, err := acl.Parse(in.Rules); err != nil {
		return h.invalid("%v", err)
	}
	res, done, err := h.aclWrite(c, body, func(*model.State, *acl.Authorizer) (*model.ACLOp, error) {
		return &model.ACLOp{Verb: model.ACLPolicySet, Create: create, Policy: &model.ACLPolicy{ID: in.ID, Name: in.Name,
			Description: in.Description, Rules: in.Rules, Datacenters: in.Datacenters}}, nil
	})
	if done || err != nil {
		return err
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	var out aclPolicyJSON
	h.b.Read(func(s *model.State) {
		p, _ := s.ACLPolicy(res.ACLID)
		out = toPolicy(p)
	})
	return writeJSON(c, http.StatusOK, out)
}

// Roles.

var roleName = regexp.MustCompile(`^[A-Za-z0-9\-_]{1,256}$`)

// aclRoleCreate is PUT /v1/acl/role.
func (h *handler) aclRoleCreate(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	return h.aclRoleWrite(c, "", true)
}

// aclRole is GET, PUT and DELETE /v1/acl/role/<id>.
func (h *handler) aclRole(c *call) error { return h.aclRecord(c, roles) }

// aclRoleByName is GET /v1/acl/role/name/<name>.
func (h *handler) aclRoleByName(c *call) error { return h.aclRecordByName(c, roles) }

// aclRoleList is GET /v1/acl/roles.
func (h *handler) aclRoleList(c *call) error {
	return h.aclRead(c, func(s *model.State, _ *acl.Authorizer) view {
		out := []aclRoleJSON{}
		for _, r := range s.ACLRoleList() {
			out = append(out, toRole(s, r))
		}
		return view{index: s.Tables().ACLRoles, body: out}
	})
}

// aclRoleWrite creates a role, or updates the one urlID names.
func (h *handler) aclRoleWrite(c *call, urlID string, create bool) error {
	body, err := aclBody(c)
	if err != nil {
		return err
	}
	var in aclRoleIn
	if err := decodeStrict(body, &in); err != nil {
		return errorf(http.StatusBadRequest, "Role decoding failed: %v", err)
	}
	if !create && in.ID == "" {
		in.ID = urlID
	}
	if in.ID != urlID {
		return errorf(http.StatusBadRequest, "Role ID in URL and payload do not match")
	}
	switch {
	case in.Name == "":
		return h.invalid("Invalid Role: no Name is set")
	case !roleName.MatchString(in.Name):
		return h.invalid("Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed")
	case !create && !validUUID(in.ID):
		return h.invalid("Role ID invalid UUID")
	case len(in.TemplatedPolicies) > 0:
		return h.invalid("Templated policies are not supported by tenure")
	case len(in.Policies) > model.MaxACLLinks || len(in.ServiceIdentities) > model.MaxACLLinks || len(in.NodeIdentities) > model.MaxACLLinks:
		return errorf(http.StatusRequestEntityTooLarge, "A role links at most %d policies and %d identities of each kind", model.MaxACLLinks, model.MaxACLLinks)
	}
	if err := h.checkIdentities(in.ServiceIdentities, in.NodeIdentities, "role"); err != nil {
		return err
	}
	res, done, err := h.aclWrite(c, body, func(s *model.State, _ *acl.Authorizer) (*model.ACLOp, error) {
		policies, err := h.policyIDs(s, in.Policies)
		if err != nil {
			return nil, err
		}
		r := &model.ACLRole{ID: in.ID, Name: in.Name, Description: in.Description, Policies: policies}
		for _, id := range in.ServiceIdentities {
			r.ServiceIdentities = append(r.ServiceIdentities, model.ACLServiceIdentity{ServiceName: id.ServiceName, Datacenters: id.Datacenters})
		}
		for _, id := range in.NodeIdentities {
			r.NodeIdentities = append(r.NodeIdentities, model.ACLNodeIdentity{NodeName: id.NodeName, Datacenter: id.Datacenter})
		}
		return &model.ACLOp{Verb: model.ACLRoleSet, Create: create, Role: r}, nil
	})
	if done || err != nil {
		return err
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	var out aclRoleJSON
	h.b.Read(func(s *model.State) {
		r, _ := s.ACLRole(res.ACLID)
		out = toRole(s, r)
	})
	return writeJSON(c, http.StatusOK, out)
}

// aclAuthorize is POST /v1/internal/acl/authorize: Consul's question "may
// my token do these?", answered on this server's tables without a write.
// Client agents ask it for the decisions they take themselves.
func (h *handler) aclAuthorize(c *call) error {
	if err := h.aclOn(); err != nil {
		return err
	}
	body, err := readBody(c, maxJSONBody, bodyTooLarge)
	if err != nil {
		return err
	}
	var reqs []authorizeJSON
	if err := decodeLoose(body, &reqs); err != nil {
		return errorf(http.StatusBadRequest, "Failed to decode request body: %v", err)
	}
	if len(reqs) > maxAuthorizations {
		return errorf(http.StatusBadRequest, "Refusing to process more than %d authorizations at once", maxAuthorizations)
	}
	out := make([]authorizeJSON, 0, len(reqs))
	if len(reqs) == 0 {
		return writeJSON(c, http.StatusOK, out)
	}
	var (
		a    *acl.Authorizer
		rerr error
	)
	h.b.Read(func(s *model.State) { a, rerr = h.authz(c, s) })
	if rerr != nil {
		return rerr
	}
	for _, r := range reqs {
		d, err := a.Enforce(acl.Resource(r.Resource), r.Segment, r.Access)
		if err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		allow := d == acl.Allow
		r.Allow = &allow
		out = append(out, r)
	}
	return writeJSON(c, http.StatusOK, out)
}

// authorizeJSON is one question to /v1/internal/acl/authorize and, with
// Allow set, its answer.
type authorizeJSON struct {
	Resource string
	Segment  string `json:",omitempty"`
	Access   string
	Allow    *bool `json:",omitempty"`
}

// validUUID reports whether id is a UUID as Consul's go-uuid parses one.
func validUUID(id string) bool {
	_, err := uuid.ParseUUID(id)
	return err == nil
}

// decodeLoose decodes as Consul's decodeBody does, unknown fields ignored.
func decodeLoose(body []byte, v any) error {
	return json.Unmarshal(body, v)
}
