package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/impl/internal/local"
)

// The agent-local endpoints: the agent's own services and checks and its
// maintenance mode. Each agent, server or client, answers them from its
// local.Agent and never forwards them; what they change reaches the catalog
// through the agent's anti-entropy (CONSUL.md §15, S61).

// WithLocalAgent serves the agent check, service and maintenance endpoints
// from la and hands every other request to next. It replaces next's own
// /v1/agent/check/pass|warn|fail, which write the catalog directly (S48),
// with Consul's agent-local ones.
func WithLocalAgent(la *local.Agent, next http.Handler, opts LocalOptions) http.Handler {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if opts.Datacenter == "" {
		opts.Datacenter = "dc1"
	}
	if opts.Jitter == nil {
		opts.Jitter = randomJitter
	}
	h := &localHandler{la: la, log: logger, dc: opts.Datacenter, jitter: opts.Jitter, reload: opts.Reload,
		acl: opts.ACL, authorize: opts.Authorize, authorizeAll: opts.AuthorizeAll, node: opts.Node}
	routes := h.routeTable()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !serveRoute(routes, w, r, logger) {
			next.ServeHTTP(w, r)
		}
	})
}

// routeTable is the endpoints the local agent answers itself; the reload
// endpoint only when the agent has config files to re-read.
func (h *localHandler) routeTable() []route {
	routes := []route{
		{"/v1/agent/check/register", false, []string{put}, h.checkRegister},
		{"/v1/agent/check/deregister/", true, []string{put}, h.checkDeregister},
		{"/v1/agent/check/update/", true, []string{put}, h.checkUpdate},
		{"/v1/agent/check/pass/", true, []string{put}, h.checkTTL(checks.Passing)},
		{"/v1/agent/check/warn/", true, []string{put}, h.checkTTL(checks.Warning)},
		{"/v1/agent/check/fail/", true, []string{put}, h.checkTTL(checks.Critical)},
		{"/v1/agent/checks", false, []string{get}, h.checkList},
		{"/v1/agent/service/register", false, []string{put}, h.serviceRegister},
		{"/v1/agent/service/deregister/", true, []string{put}, h.serviceDeregister},
		{"/v1/agent/service/maintenance/", true, []string{put}, h.serviceMaintenance},
		{"/v1/agent/services", false, []string{get}, h.serviceList},
		{"/v1/agent/service/", true, []string{get}, h.serviceGet},
		{"/v1/agent/health/service/id/", true, []string{get}, h.serviceHealthByID},
		{"/v1/agent/health/service/name/", true, []string{get}, h.serviceHealthByName},
		{"/v1/agent/maintenance", false, []string{put}, h.nodeMaintenance},
		{"/v1/agent/token/", true, []string{put}, h.agentToken}, // acltokens.go
	}
	if h.reload != nil {
		routes = append(routes, route{"/v1/agent/reload", false, []string{put}, h.reloadConfig})
	}
	return routes
}

// LocalOptions configure WithLocalAgent.
type LocalOptions struct {
	Datacenter string // shown on services; default "dc1"
	Logger     hclog.Logger
	// Jitter draws the random part, in [0, limit), added to a blocking
	// read's wait; nil means uniform.
	Jitter func(limit time.Duration) time.Duration
	// Reload re-reads the agent's config files (PUT /v1/agent/reload);
	// nil leaves the endpoint to next.
	Reload func() error
	// Node is the agent's node, the one agent:write is checked on.
	Node string
	// ACL is the agent's ACL configuration and tokens; Authorize decides a
	// permission for a request to this agent (nil allows everything).
	ACL       ACLOptions
	Authorize Authorize
	// AuthorizeAll, if set, decides a filtered list's permissions at once.
	AuthorizeAll AuthorizeAll
}

type localHandler struct {
	la           *local.Agent
	log          hclog.Logger
	dc           string
	jitter       func(time.Duration) time.Duration
	reload       func() error
	node         string
	acl          ACLOptions
	authorize    Authorize
	authorizeAll AuthorizeAll
}

// reloadConfig is PUT /v1/agent/reload: a config that fails to load or
// apply is answered 500 with the error, as Consul answers it.
func (h *localHandler) reloadConfig(c *call) error {
	if err := h.allowed(c, acl.ResourceAgent, h.node, acl.AccessWrite); err != nil {
		return err // S90
	}
	if err := h.reload(); err != nil {
		return &apiError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	h.syncNow()
	return nil
}

// refusal turns the local agent's refusals into answers with Consul's
// status and reason.
func refusal(err error) error {
	var ce *checks.Error
	if errors.As(err, &ce) {
		return &apiError{status: ce.Code, msg: ce.Reason}
	}
	return err
}

// syncNow pushes a registration or status change to the catalog before
// the reply, as Consul's agent does; a failure is only logged (the reply is
// still 200 and anti-entropy retries), as there.
func (h *localHandler) syncNow() {
	err := h.la.Syncer().SyncChanges()
	if errors.Is(err, local.ErrHalted) {
		// The agent has left: the change stays local, as it would
		// on an agent that has shut down.
		h.log.Debug("a change after the agent left is not synced", "error", err)
		return
	}
	if err != nil {
		h.log.Warn("syncing a change to the catalog failed; anti-entropy will retry", "error", err)
	}
}

// agentBody reads a register body up to the catalog register's bound (it
// may carry a service with its checks).
func agentBody(c *call) ([]byte, error) {
	return readBody(c, maxRegisterBody, bodyOver(maxRegisterBody))
}

func decodeFailed(err error) error {
	return errorf(http.StatusBadRequest, "Request decode failed: %v", err)
}

func idArg(c *call, what string) error {
	return checkLen(what, c.arg, maxNameLen)
}

// checkRegister is PUT /v1/agent/check/register.
func (h *localHandler) checkRegister(c *call) error {
	body, err := agentBody(c)
	if err != nil {
		return err
	}
	def, err := checks.Decode(body)
	if err != nil {
		return decodeFailed(err)
	}
	if err := h.vetCheckRegister(c, def); err != nil {
		return err // S90
	}
	if err := h.la.RegisterCheck(def, checks.Remote, h.secret(c)); err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// checkDeregister is PUT /v1/agent/check/deregister/<id>.
func (h *localHandler) checkDeregister(c *call) error {
	if err := idArg(c, "Check ID"); err != nil {
		return err
	}
	if err := h.checkWritable(c, c.arg); err != nil {
		return err // S90
	}
	if err := h.la.DeregisterCheck(c.arg); err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// checkUpdate is PUT /v1/agent/check/update/<id> with {"Status","Output"}.
func (h *localHandler) checkUpdate(c *call) error {
	if err := idArg(c, "Check ID"); err != nil {
		return err
	}
	body, err := readBody(c, maxJSONBody, bodyTooLarge)
	if err != nil {
		return err
	}
	var u struct{ Status, Output string }
	if len(body) == 0 {
		return errorf(http.StatusBadRequest, "Request decode failed: EOF") // Consul's decoder's words
	}
	if err := json.Unmarshal(body, &u); err != nil {
		return decodeFailed(err)
	}
	if checks.ValidStatus(u.Status) {
		// A bad status is 400 whatever the token, as in Consul.
		if err := h.checkWritable(c, c.arg); err != nil {
			return err // S90
		}
	}
	if err := h.la.UpdateTTL(c.arg, u.Status, u.Output); err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// checkTTL is PUT /v1/agent/check/pass|warn|fail/<id>[?note=]: the note
// becomes the output. A status change is in the catalog when the call
// returns, so a session bound to the check can be created right after a
// pass, as with Consul; an output-only change is deferred and the sync
// writes nothing.
func (h *localHandler) checkTTL(status string) func(c *call) error {
	return func(c *call) error {
		if err := idArg(c, "Check ID"); err != nil {
			return err
		}
		if err := h.checkWritable(c, c.arg); err != nil {
			return err // S90
		}
		if err := h.la.UpdateTTL(c.arg, status, c.query().Get("note")); err != nil {
			return refusal(err)
		}
		h.syncNow()
		return nil
	}
}

// checkList is GET /v1/agent/checks: check ID → check, from local state, in
// the catalog's check shape (checkJSON) with the agent's Interval and Timeout.
func (h *localHandler) checkList(c *call) error {
	f, err := parseFilter(c.query(), onChecks)
	if err != nil {
		return err
	}
	st := h.la.State()
	out := map[string]checkJSON{}
	readable, dropped, err := readableOf(st.Checks(), func(ch local.Check) Permission {
		if ch.ServiceName == "" {
			return Permission{acl.ResourceNode, h.node, acl.AccessRead}
		}
		return Permission{acl.ResourceService, ch.ServiceName, acl.AccessRead}
	}, h.mayAll(c))
	if err != nil {
		return err
	}
	for _, ch := range readable {
		tags := ch.ServiceTags
		if tags == nil {
			tags = []string{}
		}
		out[ch.CheckID] = checkJSON{Node: st.Node(), CheckID: ch.CheckID, Name: ch.Name, Status: model.Health(ch.Status),
			Notes: ch.Notes, Output: ch.Output, ServiceID: ch.ServiceID, ServiceName: ch.ServiceName,
			ServiceTags: tags, Type: ch.Type, Interval: ch.Interval, Timeout: ch.Timeout, Definition: definitionJSON("")}
	}
	h.setFiltered(c, dropped)
	if out, err = keepByKey(f, out, viewCheck); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, out)
}

// serviceRegister is PUT /v1/agent/service/register[?replace-existing-checks].
func (h *localHandler) serviceRegister(c *call) error {
	replace := false
	if v, ok := c.query()["replace-existing-checks"]; ok {
		// Bare, empty or a true boolean, as Consul reads it.
		b, err := strconv.ParseBool(v[0])
		replace = v[0] == "" || (err == nil && b)
	}
	body, err := agentBody(c)
	if err != nil {
		return err
	}
	def, err := local.DecodeService(body)
	if err != nil {
		return decodeFailed(err)
	}
	// The catalog register's bounds, checked here: what the agent accepts
	// its anti-entropy must be able to write.
	if err := serviceLimits(def.Wire()); err != nil {
		return err
	}
	// S90, in Consul's order: a missing name or a wildcard address is 400
	// whatever the token; then an unknown token 403; then the rest of an
	// invalid definition 400; then the permissions 403.
	if err := local.ServicePreflight(def); err != nil {
		return refusal(err)
	}
	prepared, err := h.la.PrepareService(def, checks.Remote)
	if err != nil {
		if terr := h.tokenKnown(c); terr != nil {
			return terr
		}
		return refusal(err)
	}
	if err := h.vetServiceRegister(c, def); err != nil {
		return err
	}
	if err := h.la.RegisterPrepared(prepared, replace, h.secret(c)); err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// serviceDeregister is PUT /v1/agent/service/deregister/<id>.
func (h *localHandler) serviceDeregister(c *call) error {
	if err := idArg(c, "Service ID"); err != nil {
		return err
	}
	if err := h.serviceWritable(c, c.arg); err != nil {
		return err // S90
	}
	if err := h.la.DeregisterService(c.arg); err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// agentServiceJSON is a service as GET /v1/agent/services shows it
// (api.AgentService, as Consul's buildAgentService fills it).
type agentServiceJSON struct {
	Kind              string `json:",omitempty"`
	ID                string
	Service           string
	Tags              []string
	Meta              map[string]string
	Port              int
	Ports             []model.ServicePort `json:",omitempty"`
	Address           string
	SocketPath        string                          `json:",omitempty"`
	TaggedAddresses   map[string]model.ServiceAddress `json:",omitempty"`
	Weights           weightsJSON
	EnableTagOverride bool
	ContentHash       string          `json:",omitempty"` // GET /v1/agent/service/<id> only (agentservicehash.go)
	Proxy             json.RawMessage `json:",omitempty"`
	Datacenter        string
	Locality          *model.Locality `json:",omitempty"`
}

func toAgentService(s local.Service, dc string) agentServiceJSON {
	tags, meta := s.Tags, s.Meta
	if tags == nil {
		tags = []string{}
	}
	if meta == nil {
		meta = map[string]string{}
	}
	out := agentServiceJSON{Kind: s.Kind, ID: s.ID, Service: s.Service, Tags: tags, Meta: meta,
		Port: s.DefaultPort(), Ports: s.Ports, Address: s.Address, SocketPath: s.SocketPath,
		TaggedAddresses:   s.TaggedAddresses,
		Weights:           weightsJSON{Passing: s.Weights.Passing, Warning: s.Weights.Warning},
		EnableTagOverride: s.EnableTagOverride, Datacenter: dc, Locality: s.Locality}
	// A proxy's configuration is shown for proxies and gateways only, as
	// Consul shows it.
	if s.Kind == catalogwire.KindConnectProxy || catalogwire.IsGateway(s.Kind) {
		out.Proxy = catalogwire.ProxyJSON(s.Proxy)
	}
	return out
}

// serviceList is GET /v1/agent/services: service ID → service.
func (h *localHandler) serviceList(c *call) error {
	f, err := parseFilter(c.query(), onAgentService)
	if err != nil {
		return err
	}
	out := map[string]agentServiceJSON{}
	readable, dropped, err := readableOf(h.la.State().Services(), func(s local.Service) Permission {
		return Permission{acl.ResourceService, s.Service, acl.AccessRead}
	}, h.mayAll(c))
	if err != nil {
		return err
	}
	for _, s := range readable {
		out[s.ID] = toAgentService(s, h.dc)
	}
	h.setFiltered(c, dropped)
	if out, err = keepByKey(f, out, viewAgentService); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, out)
}

// enableParam reads ?enable= as Consul does.
func enableParam(c *call) (bool, error) {
	q := c.query()
	v, ok := q["enable"]
	if !ok {
		return false, errorf(http.StatusBadRequest, "Missing value for enable")
	}
	on, err := strconv.ParseBool(v[0])
	if err != nil {
		return false, errorf(http.StatusBadRequest, "Invalid value for enable: %q", v[0])
	}
	return on, nil
}

// nodeMaintenance is PUT /v1/agent/maintenance?enable=&reason=.
func (h *localHandler) nodeMaintenance(c *call) error {
	on, err := enableParam(c)
	if err != nil {
		return err
	}
	if err := h.allowed(c, acl.ResourceNode, h.node, acl.AccessWrite); err != nil {
		return err // S90
	}
	if on {
		err = h.la.EnableNodeMaintenance(c.query().Get("reason"), h.secret(c))
	} else {
		err = h.la.DisableNodeMaintenance()
	}
	if err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// serviceMaintenance is PUT /v1/agent/service/maintenance/<id>?enable=&reason=.
func (h *localHandler) serviceMaintenance(c *call) error {
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing service ID")
	}
	if err := idArg(c, "Service ID"); err != nil {
		return err
	}
	on, err := enableParam(c)
	if err != nil {
		return err
	}
	if err := h.serviceWritable(c, c.arg); err != nil {
		return err // S90
	}
	if on {
		err = h.la.EnableServiceMaintenance(c.arg, c.query().Get("reason"), h.secret(c))
	} else {
		err = h.la.DisableServiceMaintenance(c.arg)
	}
	if err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// serviceHealthJSON is api.AgentServiceChecksInfo: a local service, its
// checks and the status they add up to.
type serviceHealthJSON struct {
	AggregatedStatus string
	Service          *agentServiceJSON
	Checks           []checkJSON
}

// serviceHealth is the health of the local service id as Consul's
// agentHealthService reckons it: its checks and the agent's node checks,
// aggregated (maintenance first, then critical, warning, passing; no check
// is passing), and the status code that goes with it: 200 passing, 429
// warning, 503 anything else.
func (h *localHandler) serviceHealth(st *local.State, svc local.Service) (int, serviceHealthJSON) {
	out := serviceHealthJSON{Checks: []checkJSON{}}
	var passing, warning, critical, maintenance, unknown bool
	for _, ch := range st.Checks() {
		if ch.ServiceID != "" && ch.ServiceID != svc.ID {
			continue
		}
		out.Checks = append(out.Checks, checkJSON{Node: st.Node(), CheckID: ch.CheckID, Name: ch.Name,
			Status: model.Health(ch.Status), Notes: ch.Notes, Output: ch.Output, ServiceID: ch.ServiceID,
			ServiceName: ch.ServiceName, ServiceTags: ch.ServiceTags, Type: ch.Type, Definition: definitionJSON("")})
		switch {
		case ch.CheckID == local.NodeMaintenanceCheckID || strings.HasPrefix(ch.CheckID, local.ServiceMaintenancePrefix):
			maintenance = true
		case ch.Status == checks.Passing:
			passing = true
		case ch.Status == checks.Warning:
			warning = true
		case ch.Status == checks.Critical:
			critical = true
		default:
			unknown = true
		}
	}
	sv := toAgentService(svc, h.dc)
	out.Service = &sv
	switch {
	case unknown:
		out.AggregatedStatus = ""
	case maintenance:
		out.AggregatedStatus = "maintenance"
	case critical:
		out.AggregatedStatus = checks.Critical
	case warning:
		out.AggregatedStatus = checks.Warning
	default:
		_ = passing // no check at all is passing too
		out.AggregatedStatus = checks.Passing
	}
	return healthCode(out.AggregatedStatus), out
}

func healthCode(status string) int {
	switch status {
	case checks.Passing:
		return http.StatusOK
	case checks.Warning:
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// textHealth is Consul's returnTextPlain: an Accept of text/plain, or
// ?format=text, asks for the bare status.
func textHealth(c *call) bool {
	if strings.HasPrefix(c.r.Header.Get("Accept"), "text/plain") {
		return true
	}
	if f := c.query().Get("format"); f != "" {
		return f == "text"
	}
	return false
}

// writeHealth answers a service health read as Consul does: the status in
// X-Consul-Reason, and the body as JSON or, when asked, the bare status.
func writeHealth(c *call, code int, reason string, body any) error {
	c.w.Header().Set("X-Consul-Reason", reason)
	if textHealth(c) {
		c.w.Header().Set("Content-Type", "text/plain")
		c.w.WriteHeader(code)
		_, _ = io.WriteString(c.w, reason)
		return nil
	}
	return writeJSON(c, code, body)
}

// serviceHealthByID is GET /v1/agent/health/service/id/<id>: 200, 429 or
// 503 by the service's health, 404 for a service the agent does not have.
func (h *localHandler) serviceHealthByID(c *call) error {
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing serviceID")
	}
	if err := idArg(c, "Service ID"); err != nil {
		return err
	}
	st := h.la.State()
	svc, ok := st.Service(c.arg)
	if !ok {
		return writeHealth(c, http.StatusNotFound, fmt.Sprintf("ServiceId %s not found", c.arg),
			serviceHealthJSON{AggregatedStatus: checks.Critical})
	}
	if err := h.allowed(c, acl.ResourceService, svc.Service, acl.AccessRead); err != nil {
		return err // S90
	}
	code, out := h.serviceHealth(st, svc)
	return writeHealth(c, code, out.AggregatedStatus, out)
}

// serviceHealthByName is GET /v1/agent/health/service/name/<name>: every
// local instance of the service with its health, answered with the worst
// instance's code, or 404 when the agent has none.
func (h *localHandler) serviceHealthByName(c *call) error {
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing service Name")
	}
	if err := idArg(c, "Service name"); err != nil {
		return err
	}
	// Decided before the lookup, as in Consul: an unknown name is 403 too.
	if err := h.allowed(c, acl.ResourceService, c.arg, acl.AccessRead); err != nil {
		return err // S90
	}
	st := h.la.State()
	code, reason := http.StatusNotFound, fmt.Sprintf("ServiceName %s Not Found", c.arg)
	out := []serviceHealthJSON{}
	for _, svc := range st.Services() {
		if svc.Service != c.arg {
			continue
		}
		scode, info := h.serviceHealth(st, svc)
		out = append(out, info)
		if code == http.StatusNotFound || code < scode {
			code, reason = scode, info.AggregatedStatus
		}
	}
	return writeHealth(c, code, reason, out)
}
