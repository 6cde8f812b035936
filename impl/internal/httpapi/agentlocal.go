package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/tenurekv/tenure/model"

	"github.com/hashicorp/go-hclog"

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
	h := &localHandler{la: la, log: logger, dc: opts.Datacenter, acl: opts.ACL, authorize: opts.Authorize, node: opts.Node}
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
		{"/v1/agent/maintenance", false, []string{put}, h.nodeMaintenance},
		{"/v1/agent/token/", true, []string{put}, h.agentToken}, // acltokens.go
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !serveRoute(routes, w, r, logger) {
			next.ServeHTTP(w, r)
		}
	})
}

// LocalOptions configure WithLocalAgent.
type LocalOptions struct {
	Datacenter string // shown on services; default "dc1"
	Logger     hclog.Logger
	// Node is the agent's node, the one agent:write is checked on.
	Node string
	// ACL is the agent's ACL configuration and tokens; Authorize decides a
	// permission for a request to this agent (nil allows everything).
	ACL       ACLOptions
	Authorize Authorize
}

type localHandler struct {
	la        *local.Agent
	log       hclog.Logger
	dc        string
	node      string
	acl       ACLOptions
	authorize Authorize
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
	if err := h.la.RegisterCheck(def, checks.Remote); err != nil {
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
	st := h.la.State()
	out := map[string]checkJSON{}
	for _, ch := range st.Checks() {
		tags := ch.ServiceTags
		if tags == nil {
			tags = []string{}
		}
		out[ch.CheckID] = checkJSON{Node: st.Node(), CheckID: ch.CheckID, Name: ch.Name, Status: model.Health(ch.Status),
			Notes: ch.Notes, Output: ch.Output, ServiceID: ch.ServiceID, ServiceName: ch.ServiceName,
			ServiceTags: tags, Type: ch.Type, Interval: ch.Interval, Timeout: ch.Timeout}
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
	if err := h.la.RegisterService(def, checks.Remote, replace); err != nil {
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
	if err := h.la.DeregisterService(c.arg); err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}

// agentServiceJSON is a service as GET /v1/agent/services shows it.
type agentServiceJSON struct {
	ID                string
	Service           string
	Tags              []string
	Meta              map[string]string
	Port              int
	Address           string
	Weights           weightsJSON
	EnableTagOverride bool
	Datacenter        string
}

func toAgentService(s local.Service, dc string) agentServiceJSON {
	tags, meta := s.Tags, s.Meta
	if tags == nil {
		tags = []string{}
	}
	if meta == nil {
		meta = map[string]string{}
	}
	return agentServiceJSON{ID: s.ID, Service: s.Service, Tags: tags, Meta: meta, Port: s.Port, Address: s.Address,
		Weights:           weightsJSON{Passing: s.Weights.Passing, Warning: s.Weights.Warning},
		EnableTagOverride: s.EnableTagOverride, Datacenter: dc}
}

// serviceList is GET /v1/agent/services: service ID → service.
func (h *localHandler) serviceList(c *call) error {
	out := map[string]agentServiceJSON{}
	for _, s := range h.la.State().Services() {
		out[s.ID] = toAgentService(s, h.dc)
	}
	return writeJSON(c, http.StatusOK, out)
}

// serviceGet is GET /v1/agent/service/<id>.
func (h *localHandler) serviceGet(c *call) error {
	if err := idArg(c, "Service ID"); err != nil {
		return err
	}
	s, ok := h.la.State().Service(c.arg)
	if !ok {
		return errorf(http.StatusNotFound, "unknown service ID: %s", c.arg)
	}
	return writeJSON(c, http.StatusOK, toAgentService(s, h.dc))
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
	if on {
		h.la.EnableNodeMaintenance(c.query().Get("reason"))
	} else {
		h.la.DisableNodeMaintenance()
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
	if on {
		err = h.la.EnableServiceMaintenance(c.arg, c.query().Get("reason"))
	} else {
		err = h.la.DisableServiceMaintenance(c.arg)
	}
	if err != nil {
		return refusal(err)
	}
	h.syncNow()
	return nil
}
