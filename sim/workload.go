package sim

import (
	"fmt"
	"math/rand/v2"
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

// Group is a session configuration and the lock key its clients contend for.
// Keys are per group so that every symptom on a key belongs to one row.
type Group struct {
	Name   string
	Config SessionConfig
	Key    string
}

// lockDelays are the two columns of the trade-off table.
var lockDelays = []time.Duration{0, 15 * time.Second}

// NewGroups draws the six configurations (three check modes × two
// lock-delays). TTLs come from the seed, within [10s, maxTTL].
func NewGroups(seed uint64, maxTTL time.Duration) []Group {
	r := stream(seed, "groups")
	var out []Group
	for _, mode := range []CheckMode{ChecksNone, ChecksSerf, ChecksTTL} {
		for _, ld := range lockDelays {
			c := SessionConfig{Checks: mode, LockDelay: ld}
			if mode == ChecksTTL {
				c.TTL = between(r, model.MinSessionTTL, max(maxTTL, model.MinSessionTTL)).Round(time.Second)
			}
			name := c.Name()
			out = append(out, Group{Name: name, Config: c, Key: "lock/" + name})
		}
	}
	return out
}

// KVKeys are the plain keys every client also reads and writes (set, cas,
// get, delete), so the history is more than locks.
var KVKeys = []string{"kv/a", "kv/b"}

// Step is one thing a client does next, drawn from its own stream.
type Step int

// Client steps.
const (
	StepKV      Step = iota // a set/cas/get/delete on a plain key
	StepWork                // while holding: write to the resources
	StepRelease             // release the lock
	StepDestroy             // destroy the session (keys follow the behaviour)
	StepIdle                // think for a while
)

// Plan is a client's seeded decision maker. Every choice the client makes is
// drawn here, in the order the client asks, so two runs of the same seed ask
// the same questions and get the same answers as long as the cluster answers
// the same way.
type Plan struct {
	r *rand.Rand
}

// NewPlan returns the plan of one client.
func NewPlan(seed uint64, client string) *Plan { return &Plan{r: stream(seed, "client/"+client)} }

// Behavior picks release or delete.
func (p *Plan) Behavior() model.Behavior {
	if p.r.IntN(3) == 0 {
		return model.BehaviorDelete
	}
	return model.BehaviorRelease
}

// UseTxnLock says whether to acquire with a txn lock (which returns the new
// LockIndex atomically) rather than ?acquire followed by a read.
func (p *Plan) UseTxnLock() bool { return p.r.IntN(2) == 0 }

// FenceByTxn says whether a fenced write is checked by check-sequencer (else
// by the monotonic LockIndex token alone).
func (p *Plan) FenceByTxn() bool { return p.r.IntN(2) == 0 }

// Next draws the next step: holding tells whether the client believes it
// holds its lock.
func (p *Plan) Next(holding bool) Step {
	x := p.r.IntN(100)
	if holding {
		switch {
		case x < 55:
			return StepWork
		case x < 70:
			return StepKV
		case x < 88:
			return StepRelease
		case x < 93:
			return StepDestroy
		}
		return StepIdle
	}
	switch {
	case x < 20:
		return StepKV
	case x < 25:
		return StepDestroy
	case x < 35:
		return StepIdle
	}
	return StepWork // try to acquire, then work
}

// Think is a pause between steps.
func (p *Plan) Think() time.Duration {
	return between(p.r, 200*time.Millisecond, 2*time.Second)
}

// RetryAfter is how long to back off after a refused acquire.
func (p *Plan) RetryAfter() time.Duration {
	return between(p.r, 500*time.Millisecond, 3*time.Second)
}

// KVOp draws a plain-key operation. value must be unique per write so that
// a lost write can be told from an overwritten one.
func (p *Plan) KVOp(value string) (verb model.KVVerb, key string) {
	key = KVKeys[p.r.IntN(len(KVKeys))]
	switch x := p.r.IntN(10); {
	case x < 4:
		return model.KVSet, key
	case x < 6:
		return model.KVCAS, key
	case x < 9:
		return model.KVGet, key
	}
	return model.KVDelete, key
}
