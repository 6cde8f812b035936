package local

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/model"
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
	// DataDir, when set, keeps every service and check registered through
	// the API, and the last status of each TTL check, on Disk (nil: the
	// real disk) so that Restore brings them back after a restart, as
	// Consul's agent keeps them in its data_dir. Empty keeps nothing (a
	// dev agent).
	DataDir string
	Disk    disk.FS
	// Logger hears about files Restore skips; nil discards.
	Logger hclog.Logger
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
	store  *store // nil without a data directory
	log    hclog.Logger

	// ops holds one token while a registration runs, so that validation,
	// bounds and the change they guard see one state. Checks report
	// through State's own lock, never this one, so a slow stop cannot
	// deadlock a report. A channel, not a sync.Mutex: a registration waits
	// on fsync while holding it, and a goroutine parked on a Mutex does
	// not count as blocked for testing/synctest.
	ops chan struct{}

	// ttls is each TTL check's TTL, which the state kept for a restart
	// runs out with; only kept with a data directory.
	ttlMu sync.Mutex
	ttls  map[string]time.Duration

	cfgDefs fromConfig // what the config files registered (config.go)
}

func (a *Agent) lockOps()   { a.ops <- struct{}{} }
func (a *Agent) unlockOps() { <-a.ops }

// NewAgent returns an agent for cfg.Node syncing to cat. Call Restore to
// bring back what a previous run kept, then Run to start anti-entropy and
// the reaper, Close to stop the checks.
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
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	st := newState(cfg.Node, cfg.CheckUpdateInterval, cfg.Stagger)
	a := &Agent{cfg: cfg, state: st, syncer: newSyncer(st, cat, cfg.Sync), log: cfg.Logger,
		ops: make(chan struct{}, 1), ttls: map[string]time.Duration{}}
	if cfg.DataDir != "" {
		a.store = newStore(cfg.Disk, cfg.DataDir)
	}
	// The agent enforces maxChecks itself before changing anything, counting
	// maintenance checks too, so the runner's bound (on running checks
	// only) never trips half-way through a registration.
	a.runner = checks.NewRunner(checks.Options{MaxChecks: cfg.maxChecks, Stagger: cfg.Stagger}, st.updateCheck)
	return a
}

// State is the agent's local state (for reads).
func (a *Agent) State() *State { return a.state }

// Syncer is the agent's anti-entropy (SyncChanges after a registration or
// a check update).
func (a *Agent) Syncer() *Syncer { return a.syncer }

// NoteServerUp asks for a full sync soon, after a random stagger of up to
// 3 s (scaled with the cluster): what Consul's agent does when a new
// leader announces itself and, on a client, when a server joins. It never
// blocks; notices that arrive before the sync merge into it.
func (a *Agent) NoteServerUp() { a.syncer.noteServerUp() }

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
// and keeps its status and output. The check keeps token, which
// anti-entropy writes it with: the request's for the API (the definition's
// own token field is not read there, as Consul's agent does not read it),
// the definition's for a config file.
func (a *Agent) RegisterCheck(def checks.Definition, src checks.Source, token string) error {
	d, err := checks.Prepare(def, src, a.cfg.Policy)
	if err != nil {
		return err
	}
	a.lockOps()
	defer a.unlockOps()
	var svc *Service
	if d.ServiceID != "" {
		s, ok := a.state.Service(d.ServiceID)
		if !ok {
			return notFound("ServiceID %q does not exist", d.ServiceID)
		}
		svc = &s
	}
	_, exists := a.state.Check(d.ID)
	if !exists {
		if _, n := a.state.counts(); n >= a.cfg.maxChecks {
			return tooMany("checks", a.cfg.maxChecks)
		}
	}
	c := checkFrom(d, svc)
	// A config file's checks come back from the config, not the data
	// directory, as Consul keeps them.
	if src != checks.Config {
		if err := a.persist(nil, []persistedCheck{{Check: c, Definition: &d, Source: sourceName(src), Token: token}}, nil); err != nil {
			return err
		}
	}
	a.state.addCheck(c, d.DeregisterCriticalServiceAfter, regToken{secret: token, local: src == checks.Config})
	a.noteTTL(d)
	return a.runner.Start(d)
}

// DeregisterCheck is PUT /v1/agent/check/deregister/<id>.
func (a *Agent) DeregisterCheck(id string) error {
	a.lockOps()
	defer a.unlockOps()
	if _, ok := a.state.Check(id); !ok {
		return unknownCheck(id)
	}
	if err := a.unpersist("", []string{id}); err != nil {
		return err
	}
	a.runner.Stop(id)
	a.state.removeCheck(id)
	a.forgetTTL(id)
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
	out, err := a.runner.UpdateTTL(id, status, output)
	if err != nil {
		return err
	}
	return a.persistTTLState(id, status, out)
}

// RegisterService is PUT /v1/agent/service/register. With
// replaceExistingChecks, the service's checks missing from def are removed.
// The service and the checks def carries keep token, as RegisterCheck
// keeps its (def.Token is the caller's to pass, for a config file).
func (a *Agent) RegisterService(def ServiceDefinition, src checks.Source, replaceExistingChecks bool, token string) error {
	p, err := a.PrepareService(def, src)
	if err != nil {
		return err
	}
	return a.RegisterPrepared(p, replaceExistingChecks, token)
}

// ServicePreflight is what Consul's endpoint checks of a service register
// body before it resolves the request's token: a name, and an address
// that is not a wildcard. The rest of PrepareService comes after it (SPEC
// S90).
func ServicePreflight(def ServiceDefinition) error {
	if def.Name == "" {
		return bad("Missing service name")
	}
	if def.Address == "0.0.0.0" || def.Address == "::" || def.Address == "[::]" {
		return bad("Invalid service address")
	}
	return nil
}

// PreparedService is a service registration validated and filled in by
// PrepareService, for RegisterPrepared.
type PreparedService struct {
	svc    Service
	checks []checks.Definition
	src    checks.Source
}

// PrepareService checks def as Consul's endpoint does after the token
// (fields tenure refuses, weights, the service's validation, each check)
// and fills in its defaults and its checks' IDs. It changes nothing; a
// check type the agent's script policy refuses is RegisterPrepared's
// refusal, after the ACL decision, as in Consul.
func (a *Agent) PrepareService(def ServiceDefinition, src checks.Source) (PreparedService, error) {
	if err := ServicePreflight(def); err != nil {
		return PreparedService{}, err
	}
	if len(def.unsupported) > 0 {
		return PreparedService{}, bad("Invalid service: %s not supported by tenure", strings.Join(def.unsupported, ", "))
	}
	id := def.ID
	if id == "" {
		id = def.Name
	}
	wire := def.Wire()
	if p := wire.Proxy; p != nil && len(p.Upstreams) > 0 {
		// An upstream registered through the agent without a type is of a
		// service (Consul's ServiceDefinition.NodeService); the catalog
		// register keeps what it is given.
		cp := *p
		cp.Upstreams = slices.Clone(p.Upstreams)
		for i := range cp.Upstreams {
			if cp.Upstreams[i].DestinationType == "" {
				cp.Upstreams[i].DestinationType = "service"
			}
		}
		wire.Proxy = &cp
	}
	if w := wire.Weights; w != nil {
		if p := catalogwire.WeightsProblem(*w); p != "" {
			return PreparedService{}, bad("Invalid Weights: %s", p)
		}
	}
	if p := model.ServiceMetaProblem(def.Kind, def.Meta); p != "" {
		return PreparedService{}, bad("Invalid Service Meta: %s", p)
	}
	if errs := wire.Validate(); len(errs) > 0 {
		return PreparedService{}, bad("Validation failed: %s", catalogwire.Reasons(errs))
	}
	details, err := wire.Details()
	if err != nil {
		return PreparedService{}, bad("Invalid service: %v", err)
	}
	tagged, err := taggedAddresses(def)
	if err != nil {
		return PreparedService{}, err
	}
	var defs []checks.Definition
	if def.Check != nil {
		defs = append(defs, *def.Check)
	}
	defs = append(defs, def.Checks...)
	prepared := make([]checks.Definition, 0, len(defs))
	for i, c := range defs {
		if c.Status != "" && !checks.ValidStatus(c.Status) {
			return PreparedService{}, bad("Status for checks must 'passing', 'warning', 'critical'")
		}
		if err := c.Validate(); err != nil {
			return PreparedService{}, bad("Invalid check: %v", err)
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
		Meta: def.Meta, EnableTagOverride: def.EnableTagOverride, Weights: w,
		Kind: def.Kind, TaggedAddresses: tagged, Ports: details.Ports, SocketPath: def.SocketPath,
		Locality: def.Locality, Proxy: details.Proxy}
	return PreparedService{svc: svc, checks: prepared, src: src}, nil
}

// RegisterPrepared registers what PrepareService gave: the agent's script
// policy, its bounds, the files, then the local state and the checks'
// runs. See RegisterService.
func (a *Agent) RegisterPrepared(p PreparedService, replaceExistingChecks bool, token string) error {
	svc, prepared, src, id := p.svc, p.checks, p.src, p.svc.ID
	for i := range prepared {
		if err := checks.ScriptAllowed(&prepared[i], src, a.cfg.Policy); err != nil {
			return err
		}
	}

	a.lockOps()
	defer a.unlockOps()
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
	var dropped []string
	if replaceExistingChecks {
		for _, c := range a.state.Checks() {
			if c.ServiceID == id && !keep[c.CheckID] && c.Type != maintenanceCheckType {
				dropped = append(dropped, c.CheckID)
			}
		}
	}
	kept := make([]persistedCheck, 0, len(prepared))
	for i := range prepared {
		kept = append(kept, persistedCheck{Check: checkFrom(prepared[i], &svc), Definition: &prepared[i], Source: sourceName(src), Token: token})
	}
	if src != checks.Config { // as for checks (RegisterCheck)
		if err := a.persist(&persistedService{Service: svc, Source: sourceName(src), Token: token}, kept, dropped); err != nil {
			return err
		}
	}
	tok := regToken{secret: token, local: src == checks.Config}

	// No sync between the service and its checks: a partial write would
	// put the service in the catalog without them.
	a.syncer.pause()
	defer a.syncer.resume()
	a.state.addService(svc, tok)
	for _, c := range prepared {
		a.state.addCheck(checkFrom(c, &svc), c.DeregisterCriticalServiceAfter, tok)
		a.noteTTL(c)
		if err := a.runner.Start(c); err != nil {
			return err
		}
	}
	for _, cid := range dropped {
		a.runner.Stop(cid)
		a.state.removeCheck(cid)
		a.forgetTTL(cid)
	}
	return nil
}

// taggedAddresses are a registration's tagged addresses with the ones
// Consul's agent adds for an IP service address (lan_ipv4 and wan_ipv4, or
// lan_ipv6 and wan_ipv6, at the address and default port) where the
// registration has none of that name; an ipv4 or ipv6 tag whose address is
// not of its kind is refused, with Consul's words and status.
func taggedAddresses(def ServiceDefinition) (map[string]model.ServiceAddress, error) {
	out := maps.Clone(def.TaggedAddresses)
	if ip := net.ParseIP(def.Address); ip != nil {
		lan, wan := "lan_ipv6", "wan_ipv6"
		if ip.To4() != nil {
			lan, wan = "lan_ipv4", "wan_ipv4"
		}
		port := Service{Port: def.Port, Ports: def.Ports}.DefaultPort()
		if out == nil {
			out = map[string]model.ServiceAddress{}
		}
		for _, tag := range []string{lan, wan} {
			if _, ok := out[tag]; !ok {
				out[tag] = model.ServiceAddress{Address: def.Address, Port: port}
			}
		}
	}
	for _, tag := range []string{"lan_ipv4", "wan_ipv4", "lan_ipv6"} {
		sa, ok := out[tag]
		if !ok {
			continue
		}
		ip := net.ParseIP(sa.Address)
		if v4 := strings.HasSuffix(tag, "ipv4"); ip == nil || (ip.To4() != nil) != v4 {
			kind := "ipv6"
			if v4 {
				kind = "ipv4"
			}
			return nil, &checks.Error{Code: http.StatusInternalServerError,
				Reason: fmt.Sprintf("Service tagged address %q must be a valid %s address", tag, kind)}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// DeregisterService is PUT /v1/agent/service/deregister/<id>; the service's
// checks go with it.
func (a *Agent) DeregisterService(id string) error {
	a.lockOps()
	defer a.unlockOps()
	if _, ok := a.state.Service(id); !ok {
		return unknownService(id)
	}
	var ids []string
	for _, c := range a.state.Checks() {
		if c.ServiceID == id {
			ids = append(ids, c.CheckID)
		}
	}
	if err := a.unpersist(id, ids); err != nil {
		return err
	}
	for _, cid := range ids {
		a.runner.Stop(cid)
		a.forgetTTL(cid)
	}
	a.state.removeService(id)
	return nil
}

// EnableNodeMaintenance adds the critical "_node_maintenance" check,
// keeping token (the request's) as RegisterCheck does; it is a no-op when
// maintenance is already on. It fails only when the check cannot be kept
// in the data directory, and then changes nothing.
func (a *Agent) EnableNodeMaintenance(reason, token string) error {
	a.lockOps()
	defer a.unlockOps()
	if _, ok := a.state.Check(NodeMaintenanceCheckID); ok {
		return nil
	}
	if reason == "" {
		reason = defaultNodeMaintReason
	}
	c := Check{CheckID: NodeMaintenanceCheckID, Name: nodeMaintenanceName, Notes: reason,
		Status: checks.Critical, Type: maintenanceCheckType}
	if err := a.persist(nil, []persistedCheck{{Check: c, Source: sourceLocal, Token: token}}, nil); err != nil {
		return err
	}
	a.state.addCheck(c, 0, regToken{secret: token, local: true})
	return nil
}

// DisableNodeMaintenance removes the node maintenance check, if any.
func (a *Agent) DisableNodeMaintenance() error {
	a.lockOps()
	defer a.unlockOps()
	if _, ok := a.state.Check(NodeMaintenanceCheckID); !ok {
		return nil
	}
	if err := a.unpersist("", []string{NodeMaintenanceCheckID}); err != nil {
		return err
	}
	a.state.removeCheck(NodeMaintenanceCheckID)
	return nil
}

// EnableServiceMaintenance adds the critical "_service_maintenance:<id>"
// check to a service (400 for an empty ID, 404 for an unknown one),
// keeping token as EnableNodeMaintenance does.
func (a *Agent) EnableServiceMaintenance(id, reason, token string) error {
	if id == "" {
		return bad("Missing service ID")
	}
	a.lockOps()
	defer a.unlockOps()
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
	c := Check{CheckID: cid, Name: serviceMaintenanceName, Notes: reason,
		Status: checks.Critical, Type: maintenanceCheckType,
		ServiceID: svc.ID, ServiceName: svc.Service, ServiceTags: svc.Tags}
	if err := a.persist(nil, []persistedCheck{{Check: c, Source: sourceLocal, Token: token}}, nil); err != nil {
		return err
	}
	a.state.addCheck(c, 0, regToken{secret: token, local: true})
	return nil
}

// DisableServiceMaintenance removes a service's maintenance check, if any.
func (a *Agent) DisableServiceMaintenance(id string) error {
	if id == "" {
		return bad("Missing service ID")
	}
	a.lockOps()
	defer a.unlockOps()
	if _, ok := a.state.Service(id); !ok {
		return unknownService(id)
	}
	cid := ServiceMaintenancePrefix + id
	if _, ok := a.state.Check(cid); !ok {
		return nil
	}
	if err := a.unpersist("", []string{cid}); err != nil {
		return err
	}
	a.state.removeCheck(cid)
	return nil
}
