package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/tenurekv/tenure/sim/simnet"
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

// Server kinds act in recipe runs as in Run.

// RecipeFaultKinds are what a seeded recipe run draws from.
var RecipeFaultKinds = []FaultKind{
	FaultHolderPause, FaultHolderPartition, FaultHolderCrash, FaultHolderSlowLink, FaultHolderClockRate,
	FaultPartition, FaultLeaderIsolation, FaultFlapping, FaultServerPause, FaultCrashRestart, FaultLeaderKill,
}

// holderFault reports whether k targets a recipe holder (else a server).
func holderFault(k FaultKind) bool {
	switch k {
	case FaultHolderPause, FaultHolderPartition, FaultHolderCrash, FaultHolderSlowLink, FaultHolderClockRate:
		return true
	}
	return false
}

// deathFault reports whether k leaves the holder unable to act.
func deathFault(k FaultKind) bool {
	return k == FaultHolderPause || k == FaultHolderPartition || k == FaultHolderCrash
}

// recipeSchedule draws a recipe run's faults: at most contenders-2
// crashes, so that someone is always left to take over (a crash past that
// becomes a pause).
func recipeSchedule(contenders int) schedulePlan {
	crashes := 0
	return schedulePlan{stream: "recipe-faults", gap: [2]time.Duration{2 * time.Second, 8 * time.Second},
		swap: func(k FaultKind) FaultKind {
			if k != FaultHolderCrash {
				return k
			}
			if crashes >= contenders-2 {
				return FaultHolderPause
			}
			crashes++
			return k
		}}
}

// procFaults are a recipe run's processes as fault targets: each holder
// fault hits whoever holds the lock when it fires.
type procFaults struct {
	cl    *cluster
	log   *recipeLog
	procs []*recipeProc
}

// target picks, by p, one of the processes that hold now, or failing that
// one that is alive; nil if every process has crashed.
func (pf procFaults) target(p uint64) (*recipeProc, bool) {
	var holders, alive []*recipeProc
	for _, pr := range pf.procs {
		if pr.isCrashed() {
			continue
		}
		alive = append(alive, pr)
		if _, ok := pr.current(); ok {
			holders = append(holders, pr)
		}
	}
	switch {
	case len(holders) > 0:
		return holders[p%uint64(len(holders))], true
	case len(alive) > 0:
		return alive[p%uint64(len(alive))], false
	}
	return nil, false
}

func (pf procFaults) startClientFault(in *injector, f Fault) (func(), bool) {
	if !holderFault(f.Kind) {
		return nil, false
	}
	p, holding := pf.target(f.Pick)
	if p == nil {
		in.mark(f, "start", nil, "no live process: ignored")
		return nil, true
	}
	note := "not holding"
	if seq, ok := p.current(); ok && holding {
		note = fmt.Sprintf("holds %s@%d/%s", seq.Key, seq.LockIndex, seq.Session)
		if deathFault(f.Kind) {
			pf.log.death(Death{Fault: f.ID, Kind: f.Kind, At: in.rec.Elapsed(), End: -1, Client: p.name, Seq: seq})
		}
	}
	ended := func() { pf.log.deathEnded(f.ID) }
	switch f.Kind {
	case FaultHolderPause:
		_ = in.net.Pause(p.name)
		p.freeze()
		in.mark(f, "start", []string{p.name}, note)
		return func() {
			_ = in.net.Resume(p.name)
			p.thaw()
			ended()
		}, true
	case FaultHolderPartition:
		_ = in.net.Partition([]string{p.name}, slices.Clone(pf.cl.peersNames()))
		if f.Param > 0 {
			_ = in.net.SetLink(p.name, resNode, simnet.Link{Latency: f.Param})
			note += "; link to " + resNode + " " + f.Param.String()
		}
		if f.Rate > 0 {
			p.clock.setRate(f.Rate)
			note += fmt.Sprintf("; clock rate %.2f", f.Rate)
		}
		in.mark(f, "start", []string{p.name}, note)
		return func() {
			in.net.Heal()
			in.net.ResetLinks()
			p.clock.setRate(0)
			ended()
		}, true
	case FaultHolderCrash:
		p.crash()
		if i := p.holdIndex(); i >= 0 {
			pf.log.ended(i, "crashed")
		}
		_ = in.net.Pause(p.name)
		in.mark(f, "start", []string{p.name}, note)
		return nil, true
	case FaultHolderSlowLink:
		_ = in.net.SetLink(p.name, resNode, simnet.Link{Latency: f.Param})
		in.mark(f, "start", []string{p.name}, note+"; link to "+resNode+" "+f.Param.String())
		return in.net.ResetLinks, true
	case FaultHolderClockRate:
		p.clock.setRate(f.Rate)
		in.mark(f, "start", []string{p.name}, fmt.Sprintf("%s; clock rate %.2f", note, f.Rate))
		return func() { p.clock.setRate(0) }, true
	}
	return nil, true
}
