package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind names a kind of fault the schedule can inject.
type FaultKind string

// Fault kinds. Targets that depend on the run (the current leader) are
// resolved when the fault fires; everything else comes from the seed.
const (
	// FaultPartition splits the servers into a majority and a minority; the
	// leader may land on either side.
	FaultPartition FaultKind = "partition"
	// FaultLeaderIsolation cuts the current leader off from every node.
	FaultLeaderIsolation FaultKind = "leader-isolation"
	// FaultFlapping cuts and heals one server's links repeatedly.
	FaultFlapping FaultKind = "flapping"
	// FaultServerClockStep steps one server's wall clock by ±(1..20) s for
	// a while. Its timers measure on that clock (S18, S22), so a step can
	// shorten a TTL or a lock-delay as that server sees them.
	FaultServerClockStep FaultKind = "server-clock-step"
	// FaultClientClockRate makes one client's clock run fast or slow for a
	// while, so its belief in its own TTL drifts from the servers'.
	FaultClientClockRate FaultKind = "client-clock-rate"
	// FaultFalsePositive keeps marking a live node's serfHealth critical
	// for a while, invalidating the sessions bound to it.
	FaultFalsePositive FaultKind = "false-positive"
	// FaultClientPause stops a client (process and network) for a while,
	// typically longer than its TTL; it resumes as if nothing happened.
	FaultClientPause FaultKind = "client-pause"
	// FaultServerPause stops a server's network and timers, then resumes it.
	FaultServerPause FaultKind = "server-pause"
	// FaultCrashRestart crashes a server and restarts it from its stores.
	FaultCrashRestart FaultKind = "crash-restart"
	// FaultLeaderKill crashes the current leader and restarts it later.
	FaultLeaderKill FaultKind = "leader-kill"
	// FaultClientCrash stops a client forever without releasing anything;
	// the failure detector then marks its node critical.
	FaultClientCrash FaultKind = "client-crash"
	// FaultSlowLink delays a client's packets to the resources by seconds.
	FaultSlowLink FaultKind = "slow-link"
	// FaultPoolLoss drops a share (Rate) of the messages between one member
	// of the gossip pool (a server or a client agent) and part of the pool,
	// both ways: gossip probes among them, and raft or HTTP, fail now and
	// then, as over a lossy link.
	FaultPoolLoss FaultKind = "pool-loss"
	// FaultOneWay stops one member's messages to part of the pool while it
	// still hears them: it cannot answer their probes.
	FaultOneWay FaultKind = "one-way-partition"
	// FaultClientPartition cuts a client's host (the process and its
	// agent) off from every server and every other agent; the resources
	// stay reachable. Its agent is alive but unreachable: gossip declares
	// it failed, a false positive for a holder that keeps working.
	FaultClientPartition FaultKind = "client-partition"
	// FaultSlowAgent starves one client agent of CPU: every message between
	// it and the rest of the pool is delayed by Param, so it answers
	// probes late (Lifeguard's case: it should refute the suspicion in
	// time and mostly not be declared failed).
	FaultSlowAgent FaultKind = "slow-agent"
	// FaultPowerLoss cuts the power of one server, a minority or every
	// server (by Pick): each loses every write its disk had not fsynced,
	// and restarts from what is left when the fault heals.
	FaultPowerLoss FaultKind = "power-loss"
	// FaultFsyncError makes one server's disk fail every fsync: the server
	// must stop rather than go on. At the heal its disk is replaced by a
	// working one holding what had been synced, and it restarts.
	FaultFsyncError FaultKind = "fsync-error"
	// FaultDiskStall makes every fsync on one server's disk take Param.
	FaultDiskStall FaultKind = "disk-stall"
)

// Fault kinds aimed at a recipe's current holder (the leader, or one slot
// holder). The target is whoever holds when the fault fires.
const (
	// FaultHolderPause stops the holder's process and network (a GC pause,
	// a stopped VM) and resumes it as if nothing happened.
	FaultHolderPause FaultKind = "holder-pause"
	// FaultHolderPartition cuts the holder's host off from every server;
	// the resources stay reachable, over a link slowed by Param if set, and
	// the host's clock runs at Rate meanwhile if set (a slow clock makes the
	// recipe believe in its session longer than the server keeps it).
	FaultHolderPartition FaultKind = "holder-partition"
	// FaultHolderCrash stops the holder's process for good without
	// releasing anything.
	FaultHolderCrash FaultKind = "holder-crash"
	// FaultHolderSlowLink slows the holder's link to the resources by Param.
	FaultHolderSlowLink FaultKind = "holder-slow-link"
	// FaultHolderClockRate runs the holder's own clock at Rate (slow: its
	// belief in its TTL outlives the server's): FaultClientClockRate aimed
	// at whoever holds the lock when it fires.
	FaultHolderClockRate FaultKind = "holder-clock-rate"
)

// holderFault reports whether k targets a recipe holder (else a server).
func HolderFault(k FaultKind) bool {
	switch k {
	case FaultHolderPause, FaultHolderPartition, FaultHolderCrash, FaultHolderSlowLink, FaultHolderClockRate:
		return true
	}
	return false
}

// deathFault reports whether k leaves the holder unable to act.
func DeathFault(k FaultKind) bool {
	return k == FaultHolderPause || k == FaultHolderPartition || k == FaultHolderCrash
}

// AllFaultKinds lists every kind, in a fixed order.
var AllFaultKinds = []FaultKind{
	FaultPartition, FaultLeaderIsolation, FaultFlapping, FaultServerClockStep,
	FaultClientClockRate, FaultFalsePositive, FaultClientPause, FaultServerPause, FaultCrashRestart,
	FaultLeaderKill, FaultClientCrash, FaultSlowLink, FaultPoolLoss, FaultOneWay, FaultSlowAgent, FaultClientPartition,
	FaultPowerLoss, FaultFsyncError, FaultDiskStall,
}

// parseFaultKinds reads a comma-separated list; "all" means every kind and
// "none" (or "") no faults.
func ParseFaultKinds(s string) ([]FaultKind, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "none":
		return nil, nil
	case "all":
		return slices.Clone(AllFaultKinds), nil
	}
	var out []FaultKind
	for _, part := range strings.Split(s, ",") {
		k := FaultKind(strings.TrimSpace(part))
		if !slices.Contains(AllFaultKinds, k) {
			return nil, fmt.Errorf("unknown fault kind %q (known: %v)", k, AllFaultKinds)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Fault is one scheduled fault. Pick is a seed-derived number the runner
// uses to choose targets (which server, which client, which side).
type Fault struct {
	ID   int           `json:"id"`
	Kind FaultKind     `json:"kind"`
	At   time.Duration `json:"at"`
	Dur  time.Duration `json:"dur"`
	Pick uint64        `json:"pick"`
	// Param is a kind-specific magnitude: the step of a server clock step,
	// the one-way delay for a slow link, the flap period for flapping. Rate
	// is a client clock rate's.
	Param time.Duration `json:"param,omitempty"`
	Rate  float64       `json:"rate,omitempty"`
	// AtCheckpoint, for a holder pause in a recipe run, lets the process
	// run on to its next checkpoint (between checking Lost and writing)
	// before its host stops, so the pause never catches it mid-write, where
	// goroutine order decides which of its writes got out first. Scripted
	// scenarios set it; seeded schedules do not.
	AtCheckpoint bool `json:"at_checkpoint,omitempty"`
}

// End is when the fault is healed.
func (f Fault) End() time.Duration { return f.At + f.Dur }

func (f Fault) String() string {
	return fmt.Sprintf("#%d %s at %v for %v", f.ID, f.Kind, f.At, f.Dur)
}

// faultDurations bounds each kind's length. Pauses run past the largest TTL
// (and 2×TTL) so that sessions expire under a paused holder; holder pauses
// and partitions range from shorter than the TTL (the holder should
// survive) to well past TTL×2 plus lock-delay (a takeover must happen).
var faultDurations = map[FaultKind][2]time.Duration{
	FaultPartition:       {3 * time.Second, 15 * time.Second},
	FaultLeaderIsolation: {3 * time.Second, 12 * time.Second},
	FaultFlapping:        {6 * time.Second, 16 * time.Second},
	FaultServerClockStep: {10 * time.Second, 30 * time.Second},
	FaultClientClockRate: {10 * time.Second, 30 * time.Second},
	FaultFalsePositive:   {2 * time.Second, 8 * time.Second},
	FaultClientPause:     {5 * time.Second, 50 * time.Second},
	FaultServerPause:     {2 * time.Second, 10 * time.Second},
	FaultCrashRestart:    {2 * time.Second, 15 * time.Second},
	FaultLeaderKill:      {3 * time.Second, 15 * time.Second},
	FaultClientCrash:     {1 * time.Second, 1 * time.Second},
	FaultSlowLink:        {5 * time.Second, 20 * time.Second},
	FaultPoolLoss:        {5 * time.Second, 20 * time.Second},
	FaultOneWay:          {3 * time.Second, 12 * time.Second},
	FaultSlowAgent:       {5 * time.Second, 30 * time.Second},
	FaultClientPartition: {5 * time.Second, 40 * time.Second},
	FaultPowerLoss:       {2 * time.Second, 15 * time.Second},
	FaultFsyncError:      {3 * time.Second, 15 * time.Second},
	FaultDiskStall:       {5 * time.Second, 20 * time.Second},
	FaultHolderPause:     {3 * time.Second, 45 * time.Second},
	FaultHolderPartition: {5 * time.Second, 40 * time.Second},
	FaultHolderCrash:     {time.Second, time.Second},
	FaultHolderSlowLink:  {5 * time.Second, 25 * time.Second},
	FaultHolderClockRate: {10 * time.Second, 30 * time.Second},
}

// drawParams draws a fault's kind-specific magnitudes.
func drawParams(r *rand.Rand, f *Fault) {
	switch f.Kind {
	case FaultServerClockStep:
		f.Param = Between(r, time.Second, 20*time.Second)
		if r.IntN(2) == 0 {
			f.Param = -f.Param
		}
	case FaultClientClockRate:
		// A rate in [0.5, 0.9] ∪ [1.1, 2].
		if r.IntN(2) == 0 {
			f.Rate = 0.5 + 0.4*r.Float64()
		} else {
			f.Rate = 1.1 + 0.9*r.Float64()
		}
	case FaultSlowLink:
		f.Param = Between(r, 2*time.Second, 12*time.Second)
	case FaultPoolLoss:
		// 5 %, 20 % or 50 % of messages lost.
		f.Rate = []float64{0.05, 0.2, 0.5}[r.IntN(3)]
	case FaultFlapping:
		f.Param = Between(r, 300*time.Millisecond, 2*time.Second)
	case FaultSlowAgent:
		// From a little late to well past memberlist's probe interval (1 s)
		// one way. Measured (TestTradeoffGossip): up to 1.5 s Lifeguard's
		// refutation keeps the agent alive; from 3 s it flaps failed.
		f.Param = Between(r, 200*time.Millisecond, 4*time.Second)
	case FaultDiskStall:
		// From a slow disk to one that stalls well past raft's heartbeat
		// and election timeouts (1 s).
		f.Param = Between(r, 200*time.Millisecond, 3*time.Second)
	case FaultHolderPartition:
		if r.IntN(2) == 0 {
			f.Param = Between(r, 5*time.Second, 20*time.Second)
		}
		if r.IntN(3) == 0 {
			f.Rate = 0.2 + 0.3*r.Float64()
		}
	case FaultHolderSlowLink:
		f.Param = Between(r, 5*time.Second, 20*time.Second)
	case FaultHolderClockRate:
		f.Rate = 0.5 + 0.4*r.Float64()
	}
}

// seededSchedule is how seeded workload runs draw their faults.
var SeededSchedule = SchedulePlan{Stream: "faults", Gap: [2]time.Duration{time.Second, 6 * time.Second}}

// schedulePlan is how a driver's runs draw their faults: the seed stream,
// the gap between faults, and an optional veto that swaps a drawn kind for
// another (a recipe run keeps someone alive to take over).
type SchedulePlan struct {
	Stream string
	Gap    [2]time.Duration
	Swap   func(k FaultKind) FaultKind
}

// HolderCrashCap is a plan on stream whose runs keep holders alive: past
// maxCrashes holder crashes, a drawn crash becomes a pause, so that
// someone is always left to take over.
func HolderCrashCap(stream string, maxCrashes int) SchedulePlan {
	crashes := 0
	return SchedulePlan{Stream: stream, Gap: [2]time.Duration{2 * time.Second, 8 * time.Second},
		Swap: func(k FaultKind) FaultKind {
			if k != FaultHolderCrash {
				return k
			}
			if crashes >= maxCrashes {
				return FaultHolderPause
			}
			crashes++
			return k
		}}
}

// newSchedule draws a fault schedule from the seed: faults of the given
// kinds, one after another with gaps, all starting at or after from and
// healed by until. The same arguments always give the same schedule.
func NewSchedule(seed uint64, plan SchedulePlan, kinds []FaultKind, from, until time.Duration) []Fault {
	if len(kinds) == 0 || until <= from {
		return nil
	}
	r := Stream(seed, plan.Stream)
	var out []Fault
	t := from
	for {
		t += Between(r, plan.Gap[0], plan.Gap[1])
		k := kinds[r.IntN(len(kinds))]
		if plan.Swap != nil {
			k = plan.Swap(k)
		}
		lim := faultDurations[k]
		f := Fault{ID: len(out) + 1, Kind: k, At: t, Dur: Between(r, lim[0], lim[1]), Pick: r.Uint64()}
		drawParams(r, &f)
		if f.End() > until {
			return out
		}
		out = append(out, f)
		t = f.End()
	}
}
