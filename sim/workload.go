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

// lockGroup is a session configuration and the lock key its clients contend for.
// Keys are per group so that every symptom on a key belongs to one row.
type lockGroup struct {
	Name   string
	Config SessionConfig
	Key    string
}

// lockDelays are the two columns of the trade-off table.
var lockDelays = []time.Duration{0, 15 * time.Second}

// newLockGroups draws the six configurations (three check modes × two
// lock-delays). TTLs come from the seed, within [10s, maxTTL].
func newLockGroups(seed uint64, maxTTL time.Duration) []lockGroup {
	r := stream(seed, "groups")
	var out []lockGroup
	for _, mode := range []CheckMode{ChecksNone, ChecksSerf, ChecksTTL} {
		for _, ld := range lockDelays {
			c := SessionConfig{Checks: mode, LockDelay: ld}
			if mode == ChecksTTL {
				c.TTL = between(r, model.MinSessionTTL, max(maxTTL, model.MinSessionTTL)).Round(time.Second)
			}
			name := c.Name()
			out = append(out, lockGroup{Name: name, Config: c, Key: "lock/" + name})
		}
	}
	return out
}

// KVKeys are the plain keys every client also reads and writes (set, cas,
// get, delete), so the history is more than locks.
var KVKeys = []string{"kv/a", "kv/b"}

// clientStep is one thing a client does next, drawn from its own stream.
type clientStep int

// Client steps.
const (
	stepKV      clientStep = iota // a set/cas/get/delete on a plain key
	stepWork                      // while holding: write to the resources
	stepRelease                   // release the lock
	stepDestroy                   // destroy the session (keys follow the behaviour)
	stepIdle                      // think for a while
)

// clientPlan is a client's seeded decision maker. Every choice the client makes is
// drawn here, in the order the client asks, so two runs of the same seed ask
// the same questions and get the same answers as long as the cluster answers
// the same way.
type clientPlan struct {
	r *rand.Rand
}

// newClientPlan returns the plan of one client.
func newClientPlan(seed uint64, client string) *clientPlan {
	return &clientPlan{r: stream(seed, "client/"+client)}
}

// Behavior picks release or delete.
func (p *clientPlan) Behavior() model.Behavior {
	if p.r.IntN(3) == 0 {
		return model.BehaviorDelete
	}
	return model.BehaviorRelease
}

// UseTxnLock says whether to acquire with a txn lock (which returns the new
// LockIndex atomically) rather than ?acquire followed by a read.
func (p *clientPlan) UseTxnLock() bool { return p.r.IntN(2) == 0 }

// FenceByTxn says whether a fenced write is checked by check-sequencer (else
// by the monotonic LockIndex token alone).
func (p *clientPlan) FenceByTxn() bool { return p.r.IntN(2) == 0 }

// Next draws the next step: holding tells whether the client believes it
// holds its lock.
func (p *clientPlan) Next(holding bool) clientStep {
	x := p.r.IntN(100)
	if holding {
		switch {
		case x < 55:
			return stepWork
		case x < 70:
			return stepKV
		case x < 88:
			return stepRelease
		case x < 93:
			return stepDestroy
		}
		return stepIdle
	}
	switch {
	case x < 20:
		return stepKV
	case x < 25:
		return stepDestroy
	case x < 35:
		return stepIdle
	}
	return stepWork // try to acquire, then work
}

// Think is a pause between steps.
func (p *clientPlan) Think() time.Duration {
	return between(p.r, 200*time.Millisecond, 2*time.Second)
}

// RetryAfter is how long to back off after a refused acquire.
func (p *clientPlan) RetryAfter() time.Duration {
	return between(p.r, 500*time.Millisecond, 3*time.Second)
}

// KVOp draws a plain-key operation. value must be unique per write so that
// a lost write can be told from an overwritten one.
func (p *clientPlan) KVOp(value string) (verb model.KVVerb, key string) {
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
