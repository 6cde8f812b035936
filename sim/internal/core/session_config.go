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

// SessionConfig is one row of the trade-off table.
type SessionConfig struct {
	Checks    CheckMode     `json:"checks"`
	TTL       time.Duration `json:"ttl,omitempty"`
	LockDelay time.Duration `json:"lock_delay"`
}

// Name is the row label, e.g. "ttl/ld=15s".
func (c SessionConfig) Name() string {
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
	return cs
}
