package local

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl/internal/checks"
)

// DefaultCheckUpdateInterval is Consul's check_update_interval: how long an
// output-only change may wait before it is written to the catalog.
const DefaultCheckUpdateInterval = 5 * time.Minute

type serviceEntry struct {
	svc     Service
	token   regToken
	ver     uint64 // bumped on every local change, so a sync that raced one does not mark it done
	inSync  bool
	deleted bool
}

type checkEntry struct {
	check   Check
	token   regToken
	dcsa    time.Duration // DeregisterCriticalServiceAfter, 0 for none
	ver     uint64
	inSync  bool
	deleted bool
	// deferred is armed by an output-only change and marks the check out of
	// sync when it fires; nil when none is pending.
	deferred      *time.Timer
	criticalSince time.Time // zero unless the check is critical
}

// State is the agent's own services and checks and, for each, whether the
// catalog has it as the agent does. It does no I/O: the Syncer reads the
// marks and writes the catalog.
type State struct {
	node                string
	checkUpdateInterval time.Duration
	stagger             func(time.Duration) time.Duration

	mu       sync.Mutex
	services map[string]*serviceEntry
	checks   map[string]*checkEntry
	ver      uint64
	changes  chan struct{} // capacity 1: pending change notices coalesce into one
	// servicesChanged is closed, and replaced, whenever a live service is
	// added, replaced or removed (watch.go).
	servicesChanged chan struct{}
}

// newState returns the empty state of node. checkUpdateInterval < 0 turns
// deferral of output-only changes off (Consul's 0); 0 means the default.
// stagger draws the random part of the deferral (nil: uniform in [0, d)).
func newState(node string, checkUpdateInterval time.Duration, stagger func(time.Duration) time.Duration) *State {
	switch {
	case checkUpdateInterval == 0:
		checkUpdateInterval = DefaultCheckUpdateInterval
	case checkUpdateInterval < 0:
		checkUpdateInterval = 0
	}
	if stagger == nil {
		stagger = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	return &State{node: node, checkUpdateInterval: checkUpdateInterval, stagger: stagger,
		services: map[string]*serviceEntry{}, checks: map[string]*checkEntry{},
		changes: make(chan struct{}, 1), servicesChanged: make(chan struct{})}
}

// Node is the agent's node name.
func (s *State) Node() string { return s.node }

// changeNotices delivers a notice whenever something went out of sync; notices
// that are not yet taken merge into one.
func (s *State) changeNotices() <-chan struct{} { return s.changes }

func (s *State) trigger() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

func (s *State) bump() uint64 {
	s.ver++
	return s.ver
}

// regToken is the ACL token a service or check keeps from its
// registration, which anti-entropy writes it with (CONSUL.md §24). It is
// kept apart from Service and Check so that nothing that shows those can
// show it.
type regToken struct {
	// secret is the registration's token: the request's (or the agent's
	// default token at that moment) for the API, the definition's token
	// field for a config file; "" for none.
	secret string
	// local marks an entry the agent's configuration or the agent itself
	// defined (config-file services and checks, maintenance checks): with
	// no secret, its sync falls back to the config-file registration token
	// before the default one, as Consul's does.
	local bool
}

// addService adds or replaces a service, with the token it keeps, and
// marks it out of sync.
func (s *State) addService(svc Service, tok regToken) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.services[svc.ID] = &serviceEntry{svc: svc.clone(), token: tok, ver: s.bump()}
	s.servicesMovedLocked()
	s.trigger()
}

// removeService marks a service and its checks deleted; the Syncer removes
// them from the catalog and then forgets them. It reports whether the
// service existed.
func (s *State) removeService(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.services[id]
	if e == nil || e.deleted {
		return false
	}
	e.deleted, e.inSync, e.ver = true, false, s.bump()
	for _, c := range s.checks {
		if c.check.ServiceID == id && !c.deleted {
			s.deleteCheckLocked(c)
		}
	}
	s.servicesMovedLocked()
	s.trigger()
	return true
}

// addCheck adds or replaces a check, with the token it keeps, and marks it
// out of sync. A check that already exists keeps its status and output, so
// re-registering does not flap it; it takes the new token. dcsa is the
// check's DeregisterCriticalServiceAfter.
func (s *State) addCheck(c Check, dcsa time.Duration, tok regToken) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c = c.clone()
	c.Node = s.node
	var since time.Time
	if old := s.checks[c.CheckID]; old != nil && !old.deleted {
		c.Status, c.Output = old.check.Status, old.check.Output
		since = old.criticalSince
		stopTimer(old)
	}
	if c.Status == checks.Critical && since.IsZero() {
		since = time.Now()
	}
	s.checks[c.CheckID] = &checkEntry{check: c, token: tok, dcsa: dcsa, ver: s.bump(), criticalSince: since}
	s.trigger()
}

// removeCheck marks a check deleted and reports whether it existed.
func (s *State) removeCheck(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[id]
	if e == nil || e.deleted {
		return false
	}
	s.deleteCheckLocked(e)
	s.trigger()
	return true
}

func (s *State) deleteCheckLocked(e *checkEntry) {
	stopTimer(e)
	e.deleted, e.inSync, e.ver = true, false, s.bump()
}

func stopTimer(e *checkEntry) {
	if e.deferred != nil {
		e.deferred.Stop()
		e.deferred = nil
	}
}

// updateCheck records a check's new result, as Consul's local state does: a
// status change goes out of sync at once; an output-only change is kept
// locally and goes out of sync only after check_update_interval/2 plus a
// random part of it, so a chatty check costs the leader little; an
// identical result changes nothing. Unknown or deleted checks are ignored
// (a runner may report once more while its check is being removed).
func (s *State) updateCheck(id, status, output string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[id]
	if e == nil || e.deleted {
		return
	}
	if status == checks.Critical {
		if e.criticalSince.IsZero() {
			e.criticalSince = time.Now()
		}
	} else {
		e.criticalSince = time.Time{}
	}
	if e.check.Status == status && e.check.Output == output {
		return
	}
	if s.checkUpdateInterval > 0 && e.check.Status == status {
		e.check.Output = output
		if e.deferred == nil {
			d := s.checkUpdateInterval
			e.deferred = time.AfterFunc(d/2+s.stagger(d), func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.checks[id] != e || e.deferred == nil {
					return
				}
				e.deferred = nil
				e.inSync, e.ver = false, s.bump()
				s.trigger()
			})
		}
		return
	}
	e.check.Status, e.check.Output = status, output
	e.inSync, e.ver = false, s.bump()
	s.trigger()
}

// Service returns a live service.
func (s *State) Service(id string) (Service, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.services[id]
	if e == nil || e.deleted {
		return Service{}, false
	}
	return e.svc.clone(), true
}

// Services returns the live services, sorted by ID.
func (s *State) Services() []Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Service, 0, len(s.services))
	for _, e := range s.services {
		if !e.deleted {
			out = append(out, e.svc.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ServiceToken is the token a live service keeps ("" for none or an
// unknown service), as Consul's State.ServiceToken.
func (s *State) ServiceToken(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.services[id]; e != nil && !e.deleted {
		return e.token.secret
	}
	return ""
}

// CheckToken is the token a live check keeps ("" for none or an unknown
// check).
func (s *State) CheckToken(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.checks[id]; e != nil && !e.deleted {
		return e.token.secret
	}
	return ""
}

// Check returns a live check.
func (s *State) Check(id string) (Check, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[id]
	if e == nil || e.deleted {
		return Check{}, false
	}
	return e.check.clone(), true
}

// Checks returns the live checks, sorted by ID; ServiceTags is never nil.
func (s *State) Checks() []Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Check, 0, len(s.checks))
	for _, e := range s.checks {
		if !e.deleted {
			c := e.check.clone()
			if c.ServiceTags == nil {
				c.ServiceTags = []string{}
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CheckID < out[j].CheckID })
	return out
}

// counts returns the number of live services and checks.
func (s *State) counts() (services, checks int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.services {
		if !e.deleted {
			services++
		}
	}
	for _, e := range s.checks {
		if !e.deleted {
			checks++
		}
	}
	return services, checks
}

// criticalServices lists the services that have a check with a
// DeregisterCriticalServiceAfter which has been critical, locally, for at
// least that long.
func (s *State) criticalServices(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(s.checks)) {
		e := s.checks[id]
		c := e.check
		if e.deleted || c.ServiceID == "" || e.dcsa <= 0 || e.criticalSince.IsZero() || seen[c.ServiceID] {
			continue
		}
		if now.Sub(e.criticalSince) >= e.dcsa {
			seen[c.ServiceID] = true
			out = append(out, c.ServiceID)
		}
	}
	sort.Strings(out)
	return out
}
