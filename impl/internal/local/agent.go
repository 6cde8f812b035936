package local

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/internal/checks"
)

// Maintenance check identity, as Consul names it.
const (
	NodeMaintenanceCheckID    = "_node_maintenance"
	ServiceMaintenancePrefix  = "_service_maintenance:"
	maintenanceCheckType      = "maintenance"
	nodeMaintenanceName       = "Node Maintenance Mode"
	serviceMaintenanceName    = "Service Maintenance Mode"
	defaultNodeMaintReason    = "Maintenance mode is enabled for this node, but no reason was provided. This is a default message."
	defaultServiceMaintReason = "Maintenance mode is enabled for this service, but no reason was provided. This is a default message."
)

// Defaults of Config.
const (
	defaultMaxServices  = 512
	defaultReapInterval = 30 * time.Second // Consul's check_reap_interval
)

// Config configures an Agent.
type Config struct {
	Node   string
	Policy checks.Policy
	// maxServices and maxChecks bound the agent's registrations (tenure's
	// own limits; Consul has none). Maintenance checks count too.
	maxServices int
	maxChecks   int
	// CheckUpdateInterval is check_update_interval (0: 5m, <0: no deferral).
	CheckUpdateInterval time.Duration
	// reapInterval is how often services with a long-critical check are
	// looked for (0: 30s).
	reapInterval time.Duration
	// Stagger draws the random waits (first check runs, deferred output
	// syncs); nil means uniform random. Sync.Stagger is separate.
	Stagger func(d time.Duration) time.Duration
	Sync    SyncConfig
}

// Agent is the agent-local half of Consul's agent: its services and checks,
// the check runners, and anti-entropy to the catalog. The HTTP layer calls
// its methods; every refusal is a *checks.Error carrying Consul's status
// code and one-line reason, and a refused call changes nothing.
type Agent struct {
	cfg    Config
	state  *State
	runner *checks.Runner
	syncer *Syncer

	// opMu serialises registrations so that validation, bounds and the
	// change they guard see one state. Checks report through State's own
	// lock, never this one, so a slow stop cannot deadlock a report.
	opMu sync.Mutex

	cfgDefs fromConfig // what the config files registered (config.go)
}

// NewAgent returns an agent for cfg.Node syncing to cat. Call Run to start
// anti-entropy and the reaper, Close to stop the checks.
func NewAgent(cfg Config, cat Catalog) *Agent {
	if cfg.maxServices <= 0 {
		cfg.maxServices = defaultMaxServices
	}
	if cfg.maxChecks <= 0 {
		cfg.maxChecks = checks.DefaultMaxChecks
	}
	if cfg.reapInterval <= 0 {
		cfg.reapInterval = defaultReapInterval
	}
	st := newState(cfg.Node, cfg.CheckUpdateInterval, cfg.Stagger)
	a := &Agent{cfg: cfg, state: st, syncer: newSyncer(st, cat, cfg.Sync)}
	// The agent enforces maxChecks itself before changing anything, counting
	// maintenance checks too, so the runner's bound (on running checks
	// only) never trips half-way through a registration.
	a.runner = checks.NewRunner(checks.Options{MaxChecks: cfg.maxChecks, Stagger: cfg.Stagger}, st.updateCheck)
	return a
}

// State is the agent's local state (for reads).
func (a *Agent) State() *State { return a.state }

// Syncer is the agent's anti-entropy (SyncChanges after a registration or
// a check update, noteServerUp on a new leader).
func (a *Agent) Syncer() *Syncer { return a.syncer }

// Run runs anti-entropy and the reaper of long-critical services until ctx
// ends.
func (a *Agent) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.syncer.run(ctx)
	}()
	t := time.NewTicker(a.cfg.reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-t.C:
			a.reap()
		}
	}
}

// reap deregisters every service one of whose checks has been critical for
// longer than its DeregisterCriticalServiceAfter, and returns their IDs.
func (a *Agent) reap() []string {
	var reaped []string
	for _, id := range a.state.criticalServices(time.Now()) {
		if a.DeregisterService(id) == nil {
			reaped = append(reaped, id)
		}
	}
	return reaped
}

// Close stops every check.
func (a *Agent) Close() { a.runner.Close() }

func bad(format string, args ...any) error {
	return &checks.Error{Code: http.StatusBadRequest, Reason: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &checks.Error{Code: http.StatusNotFound, Reason: fmt.Sprintf(format, args...)}
}

func tooMany(what string, limit int) error {
	return &checks.Error{Code: http.StatusInternalServerError,
		Reason: fmt.Sprintf("Too many %s on this agent (limit %d)", what, limit)}
}

func unknownCheck(id string) error {
	return notFound("Unknown check ID %q. Ensure that the check ID is passed, not the check name.", id)
}

func unknownService(id string) error {
	return notFound("Unknown service ID %q. Ensure that the service ID is passed, not the service name.", id)
}

func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func checkFrom(d checks.Definition, svc *Service) Check {
	c := Check{CheckID: d.ID, Name: d.Name, Status: d.Status, Notes: d.Notes,
		Type: string(d.Kind()), Interval: durationString(d.Interval), Timeout: durationString(d.Timeout)}
	if svc != nil {
		c.ServiceID, c.ServiceName, c.ServiceTags = svc.ID, svc.Service, svc.Tags
	}
	return c
}

// RegisterCheck is PUT /v1/agent/check/register: Prepare's refusals, then
// 404 for a ServiceID the agent does not have. An existing ID is replaced
// and keeps its status and output.
func (a *Agent) RegisterCheck(def checks.Definition, src checks.Source) error {
	d, err := checks.Prepare(def, src, a.cfg.Policy)
	if err != nil {
		return err
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	var svc *Service
	if d.ServiceID != "" {
		s, ok := a.state.Service(d.ServiceID)
		if !ok {
			return notFound("ServiceID %q does not exist", d.ServiceID)
		}
		svc = &s
	}
	if _, exists := a.state.Check(d.ID); !exists {
		if _, n := a.state.counts(); n >= a.cfg.maxChecks {
			return tooMany("checks", a.cfg.maxChecks)
		}
	}
	a.state.addCheck(checkFrom(d, svc), d.DeregisterCriticalServiceAfter)
	return a.runner.Start(d)
}

// DeregisterCheck is PUT /v1/agent/check/deregister/<id>.
func (a *Agent) DeregisterCheck(id string) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if _, ok := a.state.Check(id); !ok {
		return unknownCheck(id)
	}
	a.runner.Stop(id)
	a.state.removeCheck(id)
	return nil
}

// UpdateTTL is pass/warn/fail/update on a TTL check: 400 for a bad status,
// 404 for an unknown check, 500 for a check that is not TTL.
func (a *Agent) UpdateTTL(id, status, output string) error {
	if !checks.ValidStatus(status) {
		return bad("Invalid check status: '%s'", status)
	}
	if _, ok := a.state.Check(id); !ok {
		return unknownCheck(id)
	}
	_, err := a.runner.UpdateTTL(id, status, output)
	return err
}

// RegisterService is PUT /v1/agent/service/register. With
// replaceExistingChecks, the service's checks missing from def are removed.
func (a *Agent) RegisterService(def ServiceDefinition, src checks.Source, replaceExistingChecks bool) error {
	if def.Name == "" {
		return bad("Missing service name")
	}
	if len(def.unsupported) > 0 {
		return bad("Invalid service: %s not supported by tenure", strings.Join(def.unsupported, ", "))
	}
	if def.Address == "0.0.0.0" || def.Address == "::" || def.Address == "[::]" {
		return bad("Invalid service address")
	}
	id := def.ID
	if id == "" {
		id = def.Name
	}
	var defs []checks.Definition
	if def.Check != nil {
		defs = append(defs, *def.Check)
	}
	defs = append(defs, def.Checks...)
	prepared := make([]checks.Definition, 0, len(defs))
	for i, c := range defs {
		if c.Status != "" && !checks.ValidStatus(c.Status) {
			return bad("Status for checks must 'passing', 'warning', 'critical'")
		}
		if err := c.Validate(); err != nil {
			return bad("Invalid check: %v", err)
		}
		if err := checks.ScriptAllowed(&c, src, a.cfg.Policy); err != nil {
			return err
		}
		if c.ID == "" {
			c.ID = "service:" + id
			if len(defs) > 1 {
				c.ID = fmt.Sprintf("service:%s:%d", id, i+1)
			}
		}
		if c.Name == "" {
			c.Name = fmt.Sprintf("Service '%s' check", def.Name)
		}
		c.ServiceID = id
		prepared = append(prepared, checks.Normalize(c, a.cfg.Policy))
	}
	w := Weights{Passing: 1, Warning: 1}
	if def.Weights != nil {
		w = *def.Weights
	}
	svc := Service{ID: id, Service: def.Name, Tags: def.Tags, Address: def.Address, Port: def.Port,
		Meta: def.Meta, EnableTagOverride: def.EnableTagOverride, Weights: w}

	a.opMu.Lock()
	defer a.opMu.Unlock()
	nSvc, nChk := a.state.counts()
	if _, exists := a.state.Service(id); !exists && nSvc >= a.cfg.maxServices {
		return tooMany("services", a.cfg.maxServices)
	}
	keep := map[string]bool{}
	for _, c := range prepared {
		if _, exists := a.state.Check(c.ID); !exists && !keep[c.ID] {
			nChk++
		}
		keep[c.ID] = true
	}
	if nChk > a.cfg.maxChecks {
		return tooMany("checks", a.cfg.maxChecks)
	}

	// No sync between the service and its checks: a partial write would
	// put the service in the catalog without them.
	a.syncer.pause()
	defer a.syncer.resume()
	a.state.addService(svc)
	for _, c := range prepared {
		a.state.addCheck(checkFrom(c, &svc), c.DeregisterCriticalServiceAfter)
		if err := a.runner.Start(c); err != nil {
			return err
		}
	}
	if replaceExistingChecks {
		for _, c := range a.state.Checks() {
			if c.ServiceID == id && !keep[c.CheckID] && c.Type != maintenanceCheckType {
				a.runner.Stop(c.CheckID)
				a.state.removeCheck(c.CheckID)
			}
		}
	}
	return nil
}

// DeregisterService is PUT /v1/agent/service/deregister/<id>; the service's
// checks go with it.
func (a *Agent) DeregisterService(id string) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if _, ok := a.state.Service(id); !ok {
		return unknownService(id)
	}
	for _, c := range a.state.Checks() {
		if c.ServiceID == id {
			a.runner.Stop(c.CheckID)
		}
	}
	a.state.removeService(id)
	return nil
}

// EnableNodeMaintenance adds the critical "_node_maintenance" check; it is
// a no-op when maintenance is already on.
func (a *Agent) EnableNodeMaintenance(reason string) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if _, ok := a.state.Check(NodeMaintenanceCheckID); ok {
		return
	}
	if reason == "" {
		reason = defaultNodeMaintReason
	}
	a.state.addCheck(Check{CheckID: NodeMaintenanceCheckID, Name: nodeMaintenanceName, Notes: reason,
		Status: checks.Critical, Type: maintenanceCheckType}, 0)
}

// DisableNodeMaintenance removes the node maintenance check, if any.
func (a *Agent) DisableNodeMaintenance() {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	a.state.removeCheck(NodeMaintenanceCheckID)
}

// EnableServiceMaintenance adds the critical "_service_maintenance:<id>"
// check to a service (400 for an empty ID, 404 for an unknown one).
func (a *Agent) EnableServiceMaintenance(id, reason string) error {
	if id == "" {
		return bad("Missing service ID")
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	svc, ok := a.state.Service(id)
	if !ok {
		return unknownService(id)
	}
	cid := ServiceMaintenancePrefix + id
	if _, ok := a.state.Check(cid); ok {
		return nil
	}
	if reason == "" {
		reason = defaultServiceMaintReason
	}
	a.state.addCheck(Check{CheckID: cid, Name: serviceMaintenanceName, Notes: reason,
		Status: checks.Critical, Type: maintenanceCheckType,
		ServiceID: svc.ID, ServiceName: svc.Service, ServiceTags: svc.Tags}, 0)
	return nil
}

// DisableServiceMaintenance removes a service's maintenance check, if any.
func (a *Agent) DisableServiceMaintenance(id string) error {
	if id == "" {
		return bad("Missing service ID")
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if _, ok := a.state.Service(id); !ok {
		return unknownService(id)
	}
	a.state.removeCheck(ServiceMaintenancePrefix + id)
	return nil
}
