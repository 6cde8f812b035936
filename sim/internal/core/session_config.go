package core

import (
	"fmt"
	"time"

	"github.com/tenurekv/tenure/model"
)

// CheckMode is what a session is bound to besides its node.
type CheckMode string

// The three session configurations of the trade-off table.
const (
	ChecksNone CheckMode = "none" // Checks: [], no TTL: only destroy ends it
	ChecksSerf CheckMode = "serf" // the default: bound to the node's serfHealth
	ChecksTTL  CheckMode = "ttl"  // Checks: [], TTL: the client must renew
)

// AgentCheckID is the agent TTL check a client of a group with
// AgentCheck registers on its own agent (each agent is its own node, so
// one ID serves every client).
const AgentCheckID = "sim-ttl"

// AgentCheckService is the service the clients' prepared queries name
// (Consul refuses a query without one; it need not exist).
const AgentCheckService = "sim"

// SessionConfig is one row of the trade-off table.
type SessionConfig struct {
	Checks    CheckMode     `json:"checks"`
	TTL       time.Duration `json:"ttl,omitempty"`
	LockDelay time.Duration `json:"lock_delay"`
	// AgentCheck, if set, is the TTL of an agent TTL check (AgentCheckID)
	// each client registers on its own agent and keeps passing; its
	// sessions are bound to it as well (S56): with Checks serf to
	// serfHealth and the check, with none to the check alone.
	AgentCheck time.Duration `json:"agent_check,omitempty"`
}

// Name is the row label, e.g. "ttl/ld=15s", or "serf+check/ld=0s" with an
// agent check.
func (c SessionConfig) Name() string {
	if c.AgentCheck > 0 {
		return fmt.Sprintf("%s+check/ld=%v", c.Checks, c.LockDelay)
	}
	return fmt.Sprintf("%s/ld=%v", c.Checks, c.LockDelay)
}

// Create returns the session-create request for a client on node, with the
// given behaviour.
func (c SessionConfig) Create(node, name string, behavior model.Behavior) model.CreateSession {
	cs := model.CreateSession{Name: name, Node: node, LockDelay: c.LockDelay, Behavior: behavior, Checks: []string{}}
	switch c.Checks {
	case ChecksSerf:
		cs.Checks = []string{model.SerfHealthCheckID}
	case ChecksTTL:
		cs.TTL = c.TTL.String()
	}
	if c.AgentCheck > 0 {
		cs.Checks = append(cs.Checks, AgentCheckID)
	}
	return cs
}
