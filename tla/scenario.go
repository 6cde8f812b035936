package tla

import (
	"fmt"
	"slices"
	"time"

	"github.com/tenurekv/tenure/model"
)

// tick is the length of one TLA+ clock tick in the Go explorer. It is 10 s
// so that the shortest abstract TTL (2 ticks = TTL 10 s × multiplier 2) is a
// TTL the model accepts (S3).
const tick = 10 * time.Second

// scenario mirrors one set of constants of MCSessions.tla (the Rel_, Del_ or
// Two_ definitions plus the shared MC_ catalog). The distinct-state counts
// and the trace replays are what show the two agree.
type scenario struct {
	Nodes       []string
	Services    []string
	ServiceNode map[string]string
	Checks      []string
	CheckNode   map[string]string
	// CheckService is the service a check belongs to; absent for a node check.
	CheckService map[string]string

	Sessions        []string
	SessionNode     map[string]string
	SessionChecks   map[string][]string
	SessionBehavior map[string]model.Behavior
	// SessionTTL is ticks from a reset to expiry, i.e. TTL × multiplier; 0 = none.
	SessionTTL map[string]int
	// SessionDelay is the lock-delay in ticks; 0 = none.
	SessionDelay map[string]int

	Clients       []string
	ClientSession map[string]string
	// Queries are prepared queries, each bound to QuerySession's session.
	Queries      []string
	QuerySession map[string]string
	Keys         []string
}

var mcNodes = []string{"n1", "n2"}
var mcServices = []string{"w2"}
var mcServiceNode = map[string]string{"w2": "n2"}
var mcChecks = []string{"h1", "h2"}
var mcCheckNode = map[string]string{"h1": "n1", "h2": "n2"}
var mcCheckService = map[string]string{"h2": "w2"}

// scenarios are MCSessions.tla's scenarios by prefix.
var scenarios = map[string]scenario{
	"Rel": {
		Nodes: mcNodes, Services: mcServices, ServiceNode: mcServiceNode,
		Checks: mcChecks, CheckNode: mcCheckNode, CheckService: mcCheckService,
		Sessions:        []string{"s1", "s2"},
		SessionNode:     map[string]string{"s1": "n1", "s2": "n2"},
		SessionChecks:   map[string][]string{"s1": {"h1"}, "s2": {"h2"}},
		SessionBehavior: map[string]model.Behavior{"s1": model.BehaviorRelease, "s2": model.BehaviorRelease},
		SessionTTL:      map[string]int{"s1": 2, "s2": 0},
		SessionDelay:    map[string]int{"s1": 1, "s2": 0},
		Clients:         []string{"a", "b"},
		ClientSession:   map[string]string{"a": "s1", "b": "s2"},
		Queries:         []string{"q1"},
		QuerySession:    map[string]string{"q1": "s1"},
		Keys:            []string{"k"},
	},
	"Del": {
		Nodes: mcNodes, Services: mcServices, ServiceNode: mcServiceNode,
		Checks: mcChecks, CheckNode: mcCheckNode, CheckService: mcCheckService,
		Sessions:        []string{"s1", "s2"},
		SessionNode:     map[string]string{"s1": "n1", "s2": "n2"},
		SessionChecks:   map[string][]string{"s1": {"h1"}, "s2": {}},
		SessionBehavior: map[string]model.Behavior{"s1": model.BehaviorDelete, "s2": model.BehaviorRelease},
		SessionTTL:      map[string]int{"s1": 0, "s2": 2},
		SessionDelay:    map[string]int{"s1": 1, "s2": 0},
		Clients:         []string{"a", "a2", "b"},
		ClientSession:   map[string]string{"a": "s1", "a2": "s1", "b": "s2"},
		Queries:         []string{"q1"},
		QuerySession:    map[string]string{"q1": "s2"},
		Keys:            []string{"k"},
	},
	"Two": {
		Nodes: mcNodes, Services: mcServices, ServiceNode: mcServiceNode,
		Checks: mcChecks, CheckNode: mcCheckNode, CheckService: mcCheckService,
		Sessions:        []string{"s1", "s2"},
		SessionNode:     map[string]string{"s1": "n1", "s2": "n2"},
		SessionChecks:   map[string][]string{"s1": {"h1"}, "s2": {"h2"}},
		SessionBehavior: map[string]model.Behavior{"s1": model.BehaviorRelease, "s2": model.BehaviorDelete},
		SessionTTL:      map[string]int{"s1": 2, "s2": 0},
		SessionDelay:    map[string]int{"s1": 1, "s2": 0},
		Clients:         []string{"a", "b"},
		ClientSession:   map[string]string{"a": "s1", "b": "s2"},
		Keys:            []string{"k1", "k2"},
	},
}

// Validate checks what Sessions.tla ASSUMEs, plus what the Go mapping needs:
// a TTL of 2·n ticks is the model's TTL n·10 s, which must be at least 10 s,
// and a lock-delay must stay under the 60 s cap so that ticks map one to one.
func (sc scenario) Validate() error {
	for _, list := range [][]string{sc.Nodes, sc.Services, sc.Checks, sc.Sessions, sc.Clients, sc.Queries, sc.Keys} {
		if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
			return fmt.Errorf("name list %v must be sorted and free of duplicates", list)
		}
	}
	for _, sv := range sc.Services {
		if sv == none || !slices.Contains(sc.Nodes, sc.ServiceNode[sv]) {
			return fmt.Errorf("service %q is on unknown node %q", sv, sc.ServiceNode[sv])
		}
	}
	for _, ch := range sc.Checks {
		if !slices.Contains(sc.Nodes, sc.CheckNode[ch]) {
			return fmt.Errorf("check %q is on unknown node %q", ch, sc.CheckNode[ch])
		}
		if sv, ok := sc.CheckService[ch]; ok && sc.ServiceNode[sv] != sc.CheckNode[ch] {
			return fmt.Errorf("check %q of node %q belongs to service %q of node %q", ch, sc.CheckNode[ch], sv, sc.ServiceNode[sv])
		}
	}
	for _, q := range sc.Queries {
		if !slices.Contains(sc.Sessions, sc.QuerySession[q]) {
			return fmt.Errorf("query %q is bound to unknown session %q", q, sc.QuerySession[q])
		}
	}
	for _, s := range sc.Sessions {
		if s == none {
			return fmt.Errorf("session may not be named %q", none)
		}
		node := sc.SessionNode[s]
		if !slices.Contains(sc.Nodes, node) {
			return fmt.Errorf("session %q is on unknown node %q", s, node)
		}
		for _, ch := range sc.SessionChecks[s] {
			if sc.CheckNode[ch] != node {
				return fmt.Errorf("session %q on node %q is bound to check %q of node %q", s, node, ch, sc.CheckNode[ch])
			}
		}
		if b := sc.SessionBehavior[s]; b != model.BehaviorRelease && b != model.BehaviorDelete {
			return fmt.Errorf("session %q has behaviour %q", s, b)
		}
		if ttl := sc.SessionTTL[s]; ttl < 0 || ttl == 1 || ttl%model.DefaultTTLMultiplier != 0 {
			return fmt.Errorf("session %q: TTL of %d ticks is not 0 or an even number >= 2", s, ttl)
		}
		if d := sc.SessionDelay[s]; d < 0 || time.Duration(d)*tick > model.MaxLockDelay {
			return fmt.Errorf("session %q: lock-delay of %d ticks is outside [0, %v]", s, d, model.MaxLockDelay)
		}
	}
	for _, c := range sc.Clients {
		if c == none {
			return fmt.Errorf("client may not be named %q", none)
		}
		if !slices.Contains(sc.Sessions, sc.ClientSession[c]) {
			return fmt.Errorf("client %q uses unknown session %q", c, sc.ClientSession[c])
		}
	}
	return nil
}

// sessionChecks splits a session's checks the way a Consul 1.7+ client
// sends them: node checks as NodeChecks, service checks as ServiceChecks
// (S56). The legacy list stays empty.
func (sc scenario) sessionChecks(s string) (node []string, service []model.ServiceCheck) {
	for _, ch := range sc.SessionChecks[s] {
		if _, ok := sc.CheckService[ch]; ok {
			service = append(service, model.ServiceCheck{ID: ch})
		} else {
			node = append(node, ch)
		}
	}
	return node, service
}

// ttlString is the TTL the session is created with: its abstract deadline
// divided by Consul's multiplier (S19).
func (sc scenario) ttlString(s string) string {
	ticks := sc.SessionTTL[s]
	if ticks == 0 {
		return ""
	}
	return (time.Duration(ticks) * tick / model.DefaultTTLMultiplier).String()
}
