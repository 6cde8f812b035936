package local

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tenurekv/tenure/impl/internal/checks"
)

// ConfigDefinitions are the services and checks an agent's config files
// define (service, services, check, checks), registered at start and on
// every reload with the config source.
type ConfigDefinitions struct {
	Services []ServiceDefinition
	Checks   []checks.Definition
}

// DecodeConfigDefinitions decodes each definition, written as JSON, with
// the decoders of the HTTP register endpoints, so that a config file and a
// register body are read alike.
func DecodeConfigDefinitions(services, chks [][]byte) (ConfigDefinitions, error) {
	var d ConfigDefinitions
	for _, b := range services {
		s, err := DecodeService(b)
		if err != nil {
			return ConfigDefinitions{}, fmt.Errorf("service: %w", err)
		}
		d.Services = append(d.Services, s)
	}
	for _, b := range chks {
		c, err := checks.Decode(b)
		if err != nil {
			return ConfigDefinitions{}, fmt.Errorf("check: %w", err)
		}
		d.Checks = append(d.Checks, c)
	}
	return d, nil
}

// fromConfig remembers which services and checks the last LoadConfig
// registered, so that a reload removes only those and leaves the ones
// registered over HTTP alone.
type fromConfig struct {
	mu       sync.Mutex // serialises LoadConfig calls
	services map[string]bool
	checks   map[string]bool
}

// LoadConfig makes the agent's config-defined services and checks defs:
// those of the previous load that defs no longer has are deregistered, and
// every one in defs is registered again (replacing the one of the same ID,
// its service's checks included), as Consul's agent reloads them. The
// first refusal is returned with Consul's "Failed reloading" prefix; the
// definitions before it stay registered.
func (a *Agent) LoadConfig(defs ConfigDefinitions) error {
	a.cfgDefs.mu.Lock()
	defer a.cfgDefs.mu.Unlock()
	newSvc, newChk := map[string]bool{}, map[string]bool{}
	for _, s := range defs.Services {
		newSvc[serviceID(s)] = true
	}
	for _, c := range defs.Checks {
		newChk[checkID(c)] = true
	}
	for id := range a.cfgDefs.checks {
		if !newChk[id] {
			// Gone already (deregistered over HTTP) is fine.
			if err := a.DeregisterCheck(id); err != nil && !isNotFound(err) {
				return failedReloading("checks", err)
			}
		}
	}
	for id := range a.cfgDefs.services {
		if !newSvc[id] {
			if err := a.DeregisterService(id); err != nil && !isNotFound(err) {
				return failedReloading("services", err)
			}
		}
	}
	a.cfgDefs.services, a.cfgDefs.checks = map[string]bool{}, map[string]bool{}
	for _, s := range defs.Services {
		// A config file's service keeps its own token field, and its
		// checks the service's, as Consul's agent keeps them.
		if err := a.RegisterService(s, checks.Config, true, s.Token); err != nil {
			return failedReloading("services", fmt.Errorf("%s %q: %w", "Failed to register service", s.Name, err))
		}
		a.cfgDefs.services[serviceID(s)] = true
	}
	for _, c := range defs.Checks {
		if err := a.RegisterCheck(c, checks.Config, c.Token); err != nil {
			return failedReloading("checks", fmt.Errorf("%s '%s': %w", "Failed to register check", c.Name, err))
		}
		a.cfgDefs.checks[checkID(c)] = true
	}
	return nil
}

func serviceID(s ServiceDefinition) string {
	if s.ID != "" {
		return s.ID
	}
	return s.Name
}

// checkID is a check's ID as registration gives it: its name when unset.
func checkID(c checks.Definition) string {
	if c.ID != "" {
		return c.ID
	}
	return c.Name
}

func isNotFound(err error) bool {
	var ce *checks.Error
	return errors.As(err, &ce) && ce.Code == 404
}

// failedReloading is Consul's wording for a refused reload.
func failedReloading(what string, err error) error {
	return fmt.Errorf("%s: %w", "Failed reloading "+what, err)
}
