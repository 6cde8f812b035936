package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/impl/internal/server"
	"github.com/tenurekv/tenure/model"
)

// How a request is decided under ACLs (S84-S86). A handler resolves the
// caller with h.authz (inside its read, on the state it reads) or
// h.authzNow (for a write, on the leader before it proposes), asks the
// authorizer, and answers a denial through aclFailure. Resolution is
// package acl's, a pure function of the replicated tables, the request's
// secret and the agent's configuration; nothing here keeps state.

// ACLOptions is the agent's ACL configuration as its HTTP API uses it.
type ACLOptions struct {
	// Resolver decides requests. Nil, or a resolver with Enabled false,
	// means ACLs are off: every request is allowed and the ACL endpoints
	// answer 401 "ACL support disabled", as Consul's do.
	Resolver *acl.Resolver
	// Tokens are the agent's own tokens (acl.tokens.*): the default token
	// stands in for a request that names none (S86).
	Tokens *AgentTokens
	// KeyListPolicy is acl.enable_key_list_policy: a KV listing then needs
	// key:list on its prefix.
	KeyListPolicy bool
	// BootstrapResetFile is <data_dir>/acl-bootstrap-reset, where an
	// operator writes the reset index to allow one more bootstrap; "" on an
	// agent without a data dir.
	BootstrapResetFile string
}

func (o ACLOptions) enabled() bool {
	return o.Resolver != nil && o.Resolver.Config().Enabled
}

// defaultPolicy is what X-Consul-Default-ACL-Policy says: the configured
// policy with ACLs on, "allow" with them off (S86).
func (o ACLOptions) defaultPolicy() string {
	if !o.enabled() {
		return "allow"
	}
	return o.Resolver.Config().Policy()
}

// secret is the token c is decided with (S86). A request another agent
// forwarded is decided with the token that agent decided it with, which
// the frame carries (rpc.Origin.Token; carryToken): "" there is anonymous,
// never this server's default. Any other request is decided with its own
// token, else this agent's default, else "" (anonymous).
func (h *handler) secret(c *call) string {
	if o, ok := rpc.OriginFrom(c.r.Context()); ok {
		return o.Token
	}
	return acl.EffectiveSecret(c.query(), c.r.Header, h.opts.ACL.Tokens.Get(TokenDefault))
}

// authz resolves the caller's token over s, the state the handler reads
// (S86). With ACLs off it allows everything.
func (h *handler) authz(c *call, s *model.State) (*acl.Authorizer, error) {
	if !h.opts.ACL.enabled() {
		return acl.ManageAll(), nil
	}
	a, err := h.opts.ACL.Resolver.Resolve(s, h.secret(c))
	if err != nil {
		return nil, aclFailure(err)
	}
	return a, nil
}

// authzNow is authz over the state as it is now, for a write decided on
// the leader before it proposes.
func (h *handler) authzNow(c *call) (a *acl.Authorizer, err error) {
	if !h.opts.ACL.enabled() {
		return acl.ManageAll(), nil
	}
	h.b.Read(func(s *model.State) { a, err = h.authz(c, s) })
	return a, err
}

// allowed resolves the caller now and checks one permission: nil, or the
// answer to send (S85).
func (h *handler) allowed(c *call, r acl.Resource, name string, need acl.Access) error {
	a, err := h.authzNow(c)
	if err != nil {
		return err
	}
	return aclFailure(a.Check(r, name, need))
}

// aclFailure maps a resolution or decision error to Consul's answer: a
// denial or an unknown token 403, the old root names 500, ACLs off 401.
// Any other error (a stored policy that no longer parses) is a 500: it
// denies too.
func aclFailure(err error) error {
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case acl.IsPermissionDenied(err), errors.Is(err, acl.ErrNotFound):
		return &apiError{status: http.StatusForbidden, msg: err.Error()}
	case errors.Is(err, acl.ErrDisabled):
		return &apiError{status: http.StatusUnauthorized, msg: err.Error()}
	}
	return &apiError{status: http.StatusInternalServerError, msg: err.Error()}
}

// maskFiltered reports whether a read that dropped records for ACLs must
// not say so: Consul tells only callers that named a token (S86).
func (h *handler) maskFiltered(c *call) bool {
	s := h.secret(c)
	return s == "" || s == acl.AnonymousSecret
}

// filteredHeader is the header a read sets when ACLs removed records from
// its answer.
const filteredHeader = "X-Consul-Results-Filtered-By-ACLs"

// defaultPolicyHeader is set on every answer (S86).
const defaultPolicyHeader = "X-Consul-Default-Acl-Policy"

// WithACLHeader sets X-Consul-Default-ACL-Policy on every answer of next,
// as Consul's agent does whether ACLs are on or off (S86).
func WithACLHeader(opts ACLOptions, next http.Handler) http.Handler {
	policy := opts.defaultPolicy()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(defaultPolicyHeader, policy)
		next.ServeHTTP(w, r)
	})
}

// carryToken makes a request this agent forwards carry, in its frame, the
// token it is decided with here: one that names none gets the agent's
// default token, else the anonymous secret, so the server that serves it
// applies neither its own default nor anything a header says (S86). With
// ACLs off here, the request goes with the caller's token as it came.
func carryToken(req *rpc.Request, opts ACLOptions) {
	if !opts.enabled() || req.Origin.Token != "" {
		return
	}
	secret := opts.Tokens.Get(TokenDefault)
	if secret == "" {
		secret = acl.AnonymousSecret
	}
	req.Origin.Token = secret
}

// ownSecret is the token a request the agent sends on its own behalf
// carries (CONSUL.md §24): acl.tokens.agent, else acl.tokens.default, else
// the anonymous secret; "" with ACLs off.
func (o ACLOptions) ownSecret() string {
	if !o.enabled() {
		return ""
	}
	if s := o.Tokens.AgentSecret(); s != "" {
		return s
	}
	return acl.AnonymousSecret
}

// LocalAuthorize decides permissions for an agent-local endpoint on an
// agent that holds the replicated tables (a server): over b's state, with
// the request's token or the agent's default (S86).
func LocalAuthorize(b server.Backend, opts ACLOptions) Authorize {
	h := &handler{b: b, opts: Options{ACL: opts}}
	return func(r *http.Request, res acl.Resource, name string, need acl.Access) error {
		return h.allowed(&call{r: r}, res, name, need)
	}
}

// RemoteAuthorize decides permissions for an agent-local endpoint on an
// agent without the tables (a client agent): it asks a server through api,
// the agent's own handler, which forwards the question with the token the
// request is decided with (S86). A denial names the token's accessor, which
// the token's own read tells.
func RemoteAuthorize(api http.Handler) Authorize {
	return func(r *http.Request, res acl.Resource, name string, need acl.Access) error {
		q := []authorizeJSON{{Resource: string(res), Segment: name, Access: need.String()}}
		body, err := json.Marshal(q)
		if err != nil {
			return err
		}
		code, out := serveInternal(api, r, http.MethodPost, "/v1/internal/acl/authorize", body)
		if code != http.StatusOK {
			return &apiError{status: code, msg: strings.TrimSpace(string(out))}
		}
		var answers []authorizeJSON
		if err := json.Unmarshal(out, &answers); err != nil || len(answers) != 1 || answers[0].Allow == nil {
			return errorf(http.StatusInternalServerError, "ACL authorization: unexpected answer from the server")
		}
		if *answers[0].Allow {
			return nil
		}
		accessor := ""
		if code, out := serveInternal(api, r, http.MethodGet, "/v1/acl/token/self", nil); code == http.StatusOK {
			var self struct{ AccessorID string }
			if json.Unmarshal(out, &self) == nil {
				accessor = self.AccessorID
			}
		}
		if res.Singleton() {
			name = ""
		}
		return &acl.PermissionDenied{Accessor: accessor, Resource: res, Access: need, Name: name}
	}
}

// serveInternal runs one request of the agent's own through api, with the
// token r carries (its ?token and headers), and returns the answer.
func serveInternal(api http.Handler, r *http.Request, method, path string, body []byte) (int, []byte) {
	uri := path
	if t := r.URL.Query().Get("token"); t != "" {
		uri += "?token=" + url.QueryEscape(t)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, uri, bytes.NewReader(body))
	if err != nil {
		return http.StatusInternalServerError, []byte(err.Error())
	}
	for _, k := range []string{"X-Consul-Token", "Authorization"} {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[k] = v
		}
	}
	w := &memoryWriter{header: http.Header{}, code: http.StatusOK}
	api.ServeHTTP(w, req)
	return w.code, w.body.Bytes()
}

// memoryWriter is an http.ResponseWriter that keeps the answer.
type memoryWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (w *memoryWriter) Header() http.Header { return w.header }

func (w *memoryWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
}

func (w *memoryWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.body.Write(p)
}

// termReady is what a server offers that establishes leadership before it
// serves (server.Server.WaitReady).
type termReady interface {
	WaitReady(ctx context.Context) error
}

// awaitACLTerm holds a request a new leader would decide until its term is
// established, which with ACLs on includes writing the ACL records (S87):
// otherwise the first requests after an election could find no initial
// management token. A follower, or a backend without terms, does not wait;
// a request whose caller leaves stops waiting and is answered as usual.
func (h *handler) awaitACLTerm(r *http.Request) {
	if !h.opts.ACL.enabled() {
		return
	}
	if tr, ok := h.b.(termReady); ok {
		_ = tr.WaitReady(r.Context())
	}
}
