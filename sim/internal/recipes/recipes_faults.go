package recipes

import (
	"fmt"
	"slices"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/sim/simnet"
)

// Server kinds act in recipe runs as in Run.

// RecipeFaultKinds are what a seeded recipe run draws from.
var RecipeFaultKinds = []core.FaultKind{
	core.FaultHolderPause, core.FaultHolderPartition, core.FaultHolderCrash, core.FaultHolderSlowLink, core.FaultHolderClockRate,
	core.FaultPartition, core.FaultLeaderIsolation, core.FaultFlapping, core.FaultServerPause, core.FaultCrashRestart, core.FaultLeaderKill,
}

// recipeSchedule draws a recipe run's faults: at most contenders-2
// crashes, so that someone is always left to take over (a crash past that
// becomes a pause).
func RecipeSchedule(contenders int) core.SchedulePlan {
	return core.HolderCrashCap("recipe-faults", contenders-2)
}

// procFaults are a recipe run's processes as fault targets: each holder
// fault hits whoever holds the lock when it fires.
type procFaults struct {
	cl    *core.Cluster
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
		if _, ok := pr.Current(); ok {
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

func (pf procFaults) StartClientFault(in *core.Injector, f core.Fault) (func(), bool) {
	if !core.HolderFault(f.Kind) {
		return nil, false
	}
	p, holding := pf.target(f.Pick)
	if p == nil {
		in.Mark(f, "start", nil, "no live process: ignored")
		return nil, true
	}
	note := "not holding"
	if seq, ok := p.Current(); ok && holding {
		note = fmt.Sprintf("holds %s@%d/%s", seq.Key, seq.LockIndex, seq.Session)
		if core.DeathFault(f.Kind) {
			pf.log.death(Death{Fault: f.ID, Kind: f.Kind, At: in.Rec.Elapsed(), End: -1, Client: p.name, Seq: seq})
		}
	}
	ended := func() { pf.log.deathEnded(f.ID) }
	switch f.Kind {
	case core.FaultHolderPause:
		// The host stops: the process and its agent's network.
		if f.AtCheckpoint {
			// Bounded by the write sequence's timeouts and a rest.
			if p.freezeAtCheckpoint(3*resWriteTimeout + 5*time.Second) {
				note += "; at its checkpoint"
			} else {
				note += "; checkpoint not reached"
			}
		}
		resume := in.PauseHost(p.name, p.agent)
		p.freeze()
		in.Mark(f, "start", []string{p.name, p.agent}, note)
		return func() {
			resume()
			p.thaw()
			ended()
		}, true
	case core.FaultHolderPartition:
		// The host (process and agent) loses the servers.
		_ = in.Net.Partition([]string{p.name, p.agent}, slices.Clone(pf.cl.PeersNames()))
		if f.Param > 0 {
			_ = in.Net.SetLink(p.name, core.ResNode, simnet.Link{Latency: f.Param})
			note += "; link to " + core.ResNode + " " + f.Param.String()
		}
		if f.Rate > 0 {
			p.clock.SetRate(f.Rate)
			note += fmt.Sprintf("; clock rate %.2f", f.Rate)
		}
		in.Mark(f, "start", []string{p.name}, note)
		return func() {
			in.Net.Heal()
			in.Net.ResetLinks()
			p.clock.SetRate(0)
			ended()
		}, true
	case core.FaultHolderCrash:
		p.Crash()
		if i := p.holdIndex(); i >= 0 {
			pf.log.ended(i, "crashed")
		}
		_ = in.Net.Pause(p.name)
		in.Mark(f, "start", []string{p.name, p.agent}, note)
		in.CrashAgent(p.agent)
		return nil, true
	case core.FaultHolderSlowLink:
		_ = in.Net.SetLink(p.name, core.ResNode, simnet.Link{Latency: f.Param})
		in.Mark(f, "start", []string{p.name}, note+"; link to "+core.ResNode+" "+f.Param.String())
		return in.Net.ResetLinks, true
	case core.FaultHolderClockRate:
		p.clock.SetRate(f.Rate)
		in.Mark(f, "start", []string{p.name}, fmt.Sprintf("%s; clock rate %.2f", note, f.Rate))
		return func() { p.clock.SetRate(0) }, true
	}
	return nil, true
}
