package core

import (
	"fmt"
	"math"
	"time"
)

// Bounds are the timing assumptions the liveness checks rest on. Derive
// them with deriveBounds; the run records them in its header so a saved
// trace is re-checked against the same numbers.
type Bounds struct {
	// Election is how long after the last heal a stable leader exists. raft's
	// election (1-2.5 s measured) plus pre-vote rounds and a split vote or
	// two fit well inside it.
	Election time.Duration `json:"election"`
	// Detect bounds gossip's failure detection: a server silent this long
	// is declared failed by memberlist and its serfHealth set critical.
	Detect time.Duration `json:"detect"`
	// MaxTTL and TTLMultiplier: a TTL session expires at most TTL×multiplier
	// after its last reset on a stable leader (S19, S21).
	MaxTTL        time.Duration `json:"max_ttl"`
	TTLMultiplier float64       `json:"ttl_multiplier"`
	// MaxLockDelay is the largest lock-delay any session uses.
	MaxLockDelay time.Duration `json:"max_lock_delay"`
	// MinRate is the slowest server clock rate: server timers measure their
	// durations on their own clocks, so a slow clock stretches them.
	MinRate float64 `json:"min_rate"`
	// Slack covers raft commits, a failed first attempt's retry backoff and
	// the prober's own retry period.
	Slack time.Duration `json:"slack"`
	// AgentDetect bounds how long after a client agent stops answering
	// (killed, or paused) the pool declares it failed: GossipDetectBound of
	// the pool's size. 0: the run has no client agents.
	AgentDetect time.Duration `json:"agent_detect,omitempty"`
	// StaleView bounds how long after a fault heals a member may still
	// declare another failed on what it saw during the fault:
	// GossipStaleBound of the pool's size. 0: the run has no client agents.
	StaleView time.Duration `json:"stale_view,omitempty"`
	// AgentCheckTTL is the largest agent TTL check's TTL (0: none), and
	// AgentSync how long after a check's status changes on its agent the
	// catalog has it, the agent and the leader reachable: anti-entropy's
	// partial sync starts at the change (or when the sync under way ends),
	// and a sync that failed (no leader yet) is retried after RetryInterval
	// plus a stagger of up to RetryInterval: AgentSyncBound.
	AgentCheckTTL time.Duration `json:"agent_check_ttl,omitempty"`
	AgentSync     time.Duration `json:"agent_sync,omitempty"`
	// AgentSyncQuiet is AgentSync with no fault in the way. The partial
	// sync starts at the change, or behind the one sync under way; the
	// runs use 1 s, the gap agents once kept between partial syncs, now
	// margin for that sync under way.
	AgentSyncQuiet time.Duration `json:"agent_sync_quiet,omitempty"`

	// Derived (deriveBounds fills them in):
	// Invalidate: after the last heal, every session whose owner is gone for
	// good (a crashed client's TTL session) is invalidated within it.
	Invalidate time.Duration `json:"invalidate"`
	// DeadNode: after a server crashes (the others keeping a quorum), every
	// session bound to its serfHealth is invalidated within it.
	DeadNode time.Duration `json:"dead_node"`
	// Acquire: after the last heal, every key not held by a live owner can be
	// acquired within it (invalidation, then the lock-delay).
	Acquire time.Duration `json:"acquire"`
	// DeadAgent: after a client agent is killed (or paused for longer),
	// every session bound to its serfHealth is invalidated within it.
	DeadAgent time.Duration `json:"dead_agent,omitempty"`
	// CheckExpiry: once a client last passed its agent TTL check, and its
	// agent and the servers are past every fault that could stop the
	// agent's sync, every session bound to the check is invalidated within
	// it.
	CheckExpiry time.Duration `json:"check_expiry,omitempty"`
}

// AgentSyncBound is Bounds.AgentSync for impl/internal/local's default timings
// (which the simulator keeps): a partial sync at the change, and if that one
// fails, a retry within RetryInterval plus its stagger (15 s + 15 s). The
// extra second is the gap agents once kept between partial syncs, kept as
// margin for the sync a change may wait behind.
const AgentSyncBound = time.Second + 2*15*time.Second

// memberlist's LAN timing as impl/internal/gossip configures it (Consul's defaults,
// spec/CONSUL.md §13).
const (
	gossipProbeInterval  = time.Second
	gossipSuspicionMult  = 4
	gossipSuspicionMaxX  = 6 // SuspicionMaxTimeoutMult
	gossipSpreadAllowing = time.Second
)

// GossipDetectBound is the longest memberlist may take to declare a
// stopped member of a pool of n failed, from its defaults:
//
//   - every other member probes the pool round-robin, one member per
//     probe interval, reshuffling after each pass of n-1: a given prober
//     comes back to the stopped member within 2(n-1)-1 intervals;
//   - that probe fails within its interval (direct, indirect and TCP
//     probes all wait at most until the interval's end), and the member is
//     suspected;
//   - suspicion lasts SuspicionMult×log10(n)×interval once two other
//     members confirm it, and at most SuspicionMaxTimeoutMult times that
//     with no confirmation at all;
//   - the dead message then reaches the leader within a few gossip rounds
//     (200 ms each; gossipSpreadAllowing).
//
// Measured detection is far below it (6-8 s with 15 members: confirmations
// come within seconds), but only this sum holds for every schedule.
func GossipDetectBound(n int) time.Duration {
	n = max(n, 2)
	return time.Duration(2*(n-1)-1)*gossipProbeInterval + gossipProbeInterval + gossipSuspicionMaxX*suspicion(n) + gossipSpreadAllowing
}

// GossipStaleBound is how long after a fault heals a member of a pool of n
// may still declare another failed because of it: a suspicion it started
// during the fault (a cut-off or paused member suspects everyone) runs its
// course unless the suspected member hears of it and refutes, and the
// suspect messages were lost during the fault; with no confirmation it
// lasts up to SuspicionMaxTimeoutMult×SuspicionMult×log10(n) intervals,
// then the dead message spreads. Measured: a client agent cut off for 24 s
// declared a live one failed 22 s after the heal (seed 2002).
func GossipStaleBound(n int) time.Duration {
	return gossipSuspicionMaxX*suspicion(max(n, 2)) + gossipSpreadAllowing
}

// suspicion is memberlist's shortest suspicion timeout in a pool of n.
func suspicion(n int) time.Duration {
	return time.Duration(float64(gossipSuspicionMult) * max(1, math.Log10(float64(n))) * float64(gossipProbeInterval))
}

// deriveBounds fills in the derived bounds:
//
//	DeadAgent   = Election + AgentDetect + Slack
//	DeadNode    = Election + Detect/MinRate + Slack
//	CheckExpiry = AgentCheckTTL + AgentSync + Election + Slack
//	Invalidate  = Election + max(TTL×multiplier, Detect)/MinRate + Slack,
//	              and at least CheckExpiry
//	Acquire     = Invalidate + MaxLockDelay/MinRate + Slack
//
// An agent TTL check runs on its agent's clock, which the simulator does
// not skew (the bubble's): CheckExpiry is not stretched. The check expires
// AgentCheckTTL after the last pass; the agent's sync reaches a leader
// within AgentSync, which may first have to be elected; Slack covers the
// commit of the invalidating entry.
//
// The leader that exists Election after the heal re-arms every TTL with a
// full TTL×multiplier (S21) and starts its failure detector from scratch;
// either fires within the longer of the two on its own clock, which a clock
// of rate MinRate stretches by 1/MinRate in virtual time. The invalidation
// then arms the lock-delay on that leader's clock (S22).
func DeriveBounds(b Bounds) (Bounds, error) {
	if b.MinRate <= 0 || b.TTLMultiplier < 1 || b.Election <= 0 {
		return b, fmt.Errorf("bounds: need MinRate > 0, TTLMultiplier >= 1, Election > 0; got %+v", b)
	}
	stretch := func(d time.Duration) time.Duration { return time.Duration(float64(d) / b.MinRate) }
	ttl := time.Duration(float64(b.MaxTTL) * b.TTLMultiplier)
	b.DeadNode = b.Election + stretch(b.Detect) + b.Slack
	b.Invalidate = b.Election + stretch(max(ttl, b.Detect)) + b.Slack
	if b.AgentCheckTTL > 0 {
		b.CheckExpiry = b.AgentCheckTTL + b.AgentSync + b.Election + b.Slack
		b.Invalidate = max(b.Invalidate, b.CheckExpiry)
	}
	b.Acquire = b.Invalidate + stretch(b.MaxLockDelay) + b.Slack
	if b.AgentDetect > 0 {
		// memberlist runs on the bubble's clock, not a skewed one; the
		// leader that reconciles may first have to be elected.
		b.DeadAgent = b.Election + b.AgentDetect + b.Slack
	}
	return b, nil
}

func (b Bounds) String() string {
	return fmt.Sprintf("election %v + max(%v×TTL %v, detect %v)/rate %.2f + slack %v = invalidate %v; + lock-delay %v/%.2f + slack = acquire %v; dead node %v; dead agent %v",
		b.Election, b.TTLMultiplier, b.MaxTTL, b.Detect, b.MinRate, b.Slack, b.Invalidate.Round(time.Millisecond),
		b.MaxLockDelay, b.MinRate, b.Acquire.Round(time.Millisecond), b.DeadNode.Round(time.Millisecond), b.DeadAgent.Round(time.Millisecond))
}
