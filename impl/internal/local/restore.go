package local

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/impl/internal/checks"
)

// What the Agent keeps in its data directory and brings back at start
// (persist.go has the files). As Consul's agent does: a registration is
// written, with the token it keeps, before it is answered, a
// deregistration removes its files, a TTL check's status is kept until its
// TTL would have run out, and at start every restored check is critical
// except a TTL check whose kept status has not run out yet; the runner
// then decides. Registrations from the agent's configuration are not kept
// (the configuration brings them back; the maintenance checks the agent
// adds itself are kept, as Consul keeps them).

func sourceName(src checks.Source) string {
	if src == checks.Remote {
		return sourceRemote
	}
	return sourceLocal
}

func persistFailed(err error) error {
	return &checks.Error{Code: http.StatusInternalServerError,
		Reason: fmt.Sprintf("failed to keep the registration in the data directory: %v", err)}
}

// persist writes a registration's files before the agent takes it on:
// its checks first and its service last, so that a crash between the two
// never leaves a service without its checks; then it removes the files of
// the checks dropped. A check the agent does not have yet loses any state
// an earlier check of that ID left. On failure the files are put back as
// they were and nothing else changes. The caller holds ops.
func (a *Agent) persist(svc *persistedService, chks []persistedCheck, dropped []string) error {
	if a.store == nil {
		return nil
	}
	err := a.store.change(func(e *edit) error {
		for _, c := range chks {
			id := c.Check.CheckID
			if _, exists := a.state.Check(id); !exists {
				if err := e.remove(a.store.path(checkStateDir, id)); err != nil {
					return err
				}
			}
			if err := e.put(a.store.path(checksDir, id), c); err != nil {
				return err
			}
		}
		if svc != nil {
			if err := e.put(a.store.path(servicesDir, svc.Service.ID), svc); err != nil {
				return err
			}
		}
		for _, id := range dropped {
			if err := removeCheckFiles(e, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return persistFailed(err)
	}
	return nil
}

// unpersist removes the files of a service (when serviceID is set) and of
// checks, the service's first: a crash half-way leaves checks whose service
// is gone, which the next start drops. On failure nothing changes. The
// caller holds ops.
func (a *Agent) unpersist(serviceID string, checkIDs []string) error {
	if a.store == nil {
		return nil
	}
	err := a.store.change(func(e *edit) error {
		if serviceID != "" {
			if err := e.remove(a.store.path(servicesDir, serviceID)); err != nil {
				return err
			}
		}
		for _, id := range checkIDs {
			if err := removeCheckFiles(e, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return persistFailed(err)
	}
	return nil
}

func removeCheckFiles(e *edit, id string) error {
	if err := e.remove(e.s.path(checksDir, id)); err != nil {
		return err
	}
	return e.remove(e.s.path(checkStateDir, id))
}

// noteTTL remembers a TTL check's TTL (and forgets a replaced check's).
func (a *Agent) noteTTL(d checks.Definition) {
	if a.store == nil {
		return
	}
	a.ttlMu.Lock()
	defer a.ttlMu.Unlock()
	if d.TTL > 0 {
		a.ttls[d.ID] = d.TTL
	} else {
		delete(a.ttls, d.ID)
	}
}

func (a *Agent) forgetTTL(id string) {
	a.ttlMu.Lock()
	defer a.ttlMu.Unlock()
	delete(a.ttls, id)
}

// persistTTLState keeps the status a pass, warn, fail or update just set,
// until the check's TTL would run out. Consul answers a failure to keep it
// with 500, the status already set; so does tenure.
func (a *Agent) persistTTLState(id, status, output string) error {
	if a.store == nil {
		return nil
	}
	a.ttlMu.Lock()
	ttl := a.ttls[id]
	a.ttlMu.Unlock()
	if ttl <= 0 {
		return nil
	}
	if err := a.store.saveCheckState(id, status, output, time.Now().Add(ttl)); err != nil {
		return &checks.Error{Code: http.StatusInternalServerError,
			Reason: fmt.Sprintf("failed to keep the state of check %q in the data directory: %v", id, err)}
	}
	return nil
}

// Restore brings back the services and checks a previous run kept, before
// Run starts anti-entropy, so the first full sync sees them. A file that
// does not decode is logged and skipped (left in place, as Consul leaves
// it); a check whose service is gone, or that the agent's settings no
// longer allow, is logged and its files removed. Only a data directory
// that cannot be read is an error.
func (a *Agent) Restore() error {
	if a.store == nil {
		return nil
	}
	l, err := a.store.load(time.Now(), func(path string, err error) {
		a.log.Error("skipping a file of the data directory that does not decode", "file", path, "error", err)
	})
	if err != nil {
		return fmt.Errorf("restore registrations from %s: %w", a.cfg.DataDir, err)
	}
	a.lockOps()
	defer a.unlockOps()
	slices.SortFunc(l.services, func(x, y persistedService) int { return strings.Compare(x.Service.ID, y.Service.ID) })
	for _, p := range l.services {
		if reason := a.restoreService(p); reason != "" {
			a.log.Warn("dropping a kept service", "service", p.Service.ID, "reason", reason)
			a.dropFile(l.servicePath[p.Service.ID])
		}
	}
	slices.SortFunc(l.checks, func(x, y persistedCheck) int { return strings.Compare(x.Check.CheckID, y.Check.CheckID) })
	restored := map[string]bool{}
	for _, p := range l.checks {
		if reason := a.restoreCheck(p, l.states); reason != "" {
			a.log.Warn("dropping a kept check", "check", p.Check.CheckID, "reason", reason)
			a.dropFile(l.checkPath[p.Check.CheckID])
			continue
		}
		restored[p.Check.CheckID] = true
	}
	for id := range l.states {
		if !restored[id] {
			a.dropFile(a.store.path(checkStateDir, id)) // its check is gone
		}
	}
	return nil
}

// dropFile removes a kept file the restore could not use; a failure is
// only logged, since the next start drops it again.
func (a *Agent) dropFile(path string) {
	if path == "" {
		return
	}
	err := a.store.change(func(e *edit) error {
		if err := a.store.removeDurably(path); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		a.log.Warn("could not remove a kept file", "file", path, "error", err)
	}
}

// restoreService takes a kept service back, or says why not.
func (a *Agent) restoreService(p persistedService) string {
	if p.Source != sourceRemote {
		return fmt.Sprintf("unknown source %q", p.Source)
	}
	if p.Service.Service == "" {
		return "no service name"
	}
	if _, exists := a.state.Service(p.Service.ID); !exists {
		if n, _ := a.state.counts(); n >= a.cfg.maxServices {
			return fmt.Sprintf("more services than this agent takes (limit %d)", a.cfg.maxServices)
		}
	}
	a.state.addService(p.Service, regToken{secret: p.Token})
	return ""
}

// restoreCheck takes a kept check back, critical unless it is a TTL check
// whose kept status has not run out, or says why not.
func (a *Agent) restoreCheck(p persistedCheck, states map[string]persistedCheckState) string {
	id := p.Check.CheckID
	var svc *Service
	if sid := p.Check.ServiceID; sid != "" {
		s, ok := a.state.Service(sid)
		if !ok {
			return fmt.Sprintf("its service %q is gone", sid)
		}
		svc = &s
	}
	if _, exists := a.state.Check(id); !exists {
		if _, n := a.state.counts(); n >= a.cfg.maxChecks {
			return fmt.Sprintf("more checks than this agent takes (limit %d)", a.cfg.maxChecks)
		}
	}
	if p.Definition == nil {
		// A maintenance check: critical by nature.
		if p.Source != sourceLocal || p.Check.Type != maintenanceCheckType {
			return "no definition to run"
		}
		c := p.Check
		c.Status, c.Output = checks.Critical, ""
		if svc != nil {
			c.ServiceName, c.ServiceTags = svc.Service, svc.Tags
		}
		a.state.addCheck(c, 0, regToken{secret: p.Token, local: true})
		return ""
	}
	if p.Source != sourceRemote {
		return fmt.Sprintf("unknown source %q", p.Source)
	}
	d := *p.Definition
	d.ID, d.ServiceID = id, p.Check.ServiceID
	if err := d.Validate(); err != nil {
		return err.Error()
	}
	if err := checks.ScriptAllowed(&d, checks.Remote, a.cfg.Policy); err != nil {
		return err.Error()
	}
	d = checks.Normalize(d, a.cfg.Policy)
	d.Status = checks.Critical
	c := checkFrom(d, svc)
	if st, ok := states[id]; ok && d.TTL > 0 {
		c.Status, c.Output = st.Status, st.Output
	}
	a.state.addCheck(c, d.DeregisterCriticalServiceAfter, regToken{secret: p.Token})
	a.noteTTL(d)
	if err := a.runner.Start(d); err != nil {
		a.state.removeCheck(id)
		a.forgetTTL(id)
		return err.Error()
	}
	return ""
}
