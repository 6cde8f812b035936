package workload

import (
	"math/rand/v2"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// lockGroup is a session configuration and the lock key its clients contend for.
// Keys are per group so that every symptom on a key belongs to one row.
type LockGroup struct {
	Name   string
	Config core.SessionConfig
	Key    string
}

// lockDelays are the two columns of the trade-off table.
var lockDelays = []time.Duration{0, 15 * time.Second}

// newLockGroups draws the six configurations (three check modes × two
// lock-delays). TTLs come from the seed, within [10s, maxTTL]. Each "none"
// and "serf" group also binds its sessions to an agent TTL check with
// probability one half (its own stream, so the TTL draws stay as they
// were): "none+check" sessions hang on the check alone, "serf+check" ones
// on serfHealth and the check.
func NewLockGroups(seed uint64, maxTTL time.Duration) []LockGroup {
	r := core.Stream(seed, "groups")
	rc := core.Stream(seed, "agent-checks")
	var out []LockGroup
	for _, mode := range []core.CheckMode{core.ChecksNone, core.ChecksSerf, core.ChecksTTL} {
		for _, ld := range lockDelays {
			c := core.SessionConfig{Checks: mode, LockDelay: ld}
			if mode == core.ChecksTTL {
				c.TTL = core.Between(r, model.MinSessionTTL, max(maxTTL, model.MinSessionTTL)).Round(time.Second)
			} else if rc.IntN(2) == 0 {
				c.AgentCheck = core.Between(rc, agentCheckTTL[0], agentCheckTTL[1]).Round(time.Second)
			}
			name := c.Name()
			out = append(out, LockGroup{Name: name, Config: c, Key: "lock/" + name})
		}
	}
	return out
}

// agentCheckTTL bounds the agent TTL checks' TTLs.
var agentCheckTTL = [2]time.Duration{10 * time.Second, 15 * time.Second}

// KVKeys are the plain keys every client also reads and writes (set, cas,
// get, delete), so the history is more than locks.
var kvKeys = []string{"kv/a", "kv/b"}

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
	return &clientPlan{r: core.Stream(seed, "client/"+client)}
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

// BindQuery says whether to create a prepared query bound to a new session.
func (p *clientPlan) BindQuery() bool { return p.r.IntN(3) == 0 }

// ProcessOnly says whether a pause or crash aimed at this client stops only
// its process (a GC pause, an application crash) and leaves its host and
// agent running, so its agent TTL check expires there. Drawn from the
// fault, not the client's stream: the schedule alone decides it.
func ProcessOnly(f core.Fault, clients int) bool {
	return (f.Pick/uint64(max(clients, 1)))%2 == 0
}

// Think is a pause between steps.
func (p *clientPlan) Think() time.Duration {
	return core.Between(p.r, 200*time.Millisecond, 2*time.Second)
}

// RetryAfter is how long to back off after a refused acquire.
func (p *clientPlan) RetryAfter() time.Duration {
	return core.Between(p.r, 500*time.Millisecond, 3*time.Second)
}

// KVOp draws a plain-key operation. value must be unique per write so that
// a lost write can be told from an overwritten one.
func (p *clientPlan) KVOp(value string) (verb model.KVVerb, key string) {
	key = kvKeys[p.r.IntN(len(kvKeys))]
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
