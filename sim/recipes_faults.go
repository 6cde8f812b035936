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

// recipeFaultDurations: holder pauses and partitions range from shorter than
// the TTL (the holder should survive) to well past TTL×2 plus lock-delay (a
// takeover must happen).
var recipeFaultDurations = map[FaultKind][2]time.Duration{
	FaultHolderPause:     {3 * time.Second, 45 * time.Second},
	FaultHolderPartition: {5 * time.Second, 40 * time.Second},
	FaultHolderCrash:     {time.Second, time.Second},
	FaultHolderSlowLink:  {5 * time.Second, 25 * time.Second},
	FaultHolderClockRate: {10 * time.Second, 30 * time.Second},
}

// newRecipeSchedule draws a recipe run's faults: one after another with
// gaps, starting at or after from and healed by until. At most
// contenders-2 crashes, so that someone is always left to take over.
func newRecipeSchedule(seed uint64, kinds []FaultKind, contenders int, from, until time.Duration) []Fault {
	if len(kinds) == 0 || until <= from {
		return nil
	}
	r := stream(seed, "recipe-faults")
	var out []Fault
	crashes := 0
	t := from
	for {
		t += between(r, 2*time.Second, 8*time.Second)
		k := kinds[r.IntN(len(kinds))]
		if k == FaultHolderCrash {
			if crashes >= contenders-2 {
				k = FaultHolderPause
			} else {
				crashes++
			}
		}
		lim, ok := recipeFaultDurations[k]
		if !ok {
			lim = faultDurations[k]
		}
		f := Fault{ID: len(out) + 1, Kind: k, At: t, Dur: between(r, lim[0], lim[1]), Pick: r.Uint64()}
		switch k {
		case FaultHolderPartition:
			if r.IntN(2) == 0 {
				f.Param = between(r, 5*time.Second, 20*time.Second)
			}
			if r.IntN(3) == 0 {
				f.Rate = 0.2 + 0.3*r.Float64()
			}
		case FaultHolderSlowLink:
			f.Param = between(r, 5*time.Second, 20*time.Second)
		case FaultHolderClockRate:
			f.Rate = 0.5 + 0.4*r.Float64()
		case FaultFlapping:
			f.Param = between(r, 300*time.Millisecond, 2*time.Second)
		}
		if f.End() > until {
			return out
		}
		out = append(out, f)
		t = f.End()
	}
}

// recipeInjector carries out a recipe run's schedule: holder faults on the
// processes, server faults through the sim's injector.
type recipeInjector struct {
	cl    *cluster
	net   *simnet.Network
	rec   *Recorder
	log   *recipeLog
	procs []*recipeProc
	t0    time.Duration
}

func (in *recipeInjector) servers() *injector {
	return &injector{cl: in.cl, net: in.net, rec: in.rec, t0: in.t0}
}

func (in *recipeInjector) run(f Fault) {
	in.servers().sleepUntil(f.At)
	heal := in.start(f)
	in.servers().sleepUntil(f.End())
	if heal != nil {
		heal()
	}
	in.servers().mark(f, "end", nil, "")
}

// target picks, by p, one of the processes that hold now, or failing that
// one that is alive; nil if every process has crashed.
func (in *recipeInjector) target(p uint64) (*recipeProc, bool) {
	var holders, alive []*recipeProc
	for _, pr := range in.procs {
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

func (in *recipeInjector) start(f Fault) func() {
	if !holderFault(f.Kind) {
		return in.servers().start(f)
	}
	m := in.servers()
	p, holding := in.target(f.Pick)
	if p == nil {
		m.mark(f, "start", nil, "no live process: ignored")
		return nil
	}
	note := "not holding"
	if seq, ok := p.current(); ok && holding {
		note = fmt.Sprintf("holds %s@%d/%s", seq.Key, seq.LockIndex, seq.Session)
		if deathFault(f.Kind) {
			in.log.death(Death{Fault: f.ID, Kind: f.Kind, At: in.rec.Elapsed(), End: -1, Client: p.name, Seq: seq})
		}
	}
	ended := func() { in.log.deathEnded(f.ID) }
	switch f.Kind {
	case FaultHolderPause:
		_ = in.net.Pause(p.name)
		p.freeze()
		m.mark(f, "start", []string{p.name}, note)
		return func() {
			_ = in.net.Resume(p.name)
			p.thaw()
			ended()
		}
	case FaultHolderPartition:
		_ = in.net.Partition([]string{p.name}, slices.Clone(in.cl.peersNames()))
		if f.Param > 0 {
			_ = in.net.SetLink(p.name, resNode, simnet.Link{Latency: f.Param})
			note += "; link to " + resNode + " " + f.Param.String()
		}
		if f.Rate > 0 {
			p.clock.setRate(f.Rate)
			note += fmt.Sprintf("; clock rate %.2f", f.Rate)
		}
		m.mark(f, "start", []string{p.name}, note)
		return func() {
			in.net.Heal()
			in.net.ResetLinks()
			p.clock.setRate(0)
			ended()
		}
	case FaultHolderCrash:
		p.crash()
		if i := p.holdIndex(); i >= 0 {
			in.log.ended(i, "crashed")
		}
		_ = in.net.Pause(p.name)
		m.mark(f, "start", []string{p.name}, note)
		return nil
	case FaultHolderSlowLink:
		_ = in.net.SetLink(p.name, resNode, simnet.Link{Latency: f.Param})
		m.mark(f, "start", []string{p.name}, note+"; link to "+resNode+" "+f.Param.String())
		return in.net.ResetLinks
	case FaultHolderClockRate:
		p.clock.setRate(f.Rate)
		m.mark(f, "start", []string{p.name}, fmt.Sprintf("%s; clock rate %.2f", note, f.Rate))
		return func() { p.clock.setRate(0) }
	}
	return nil
}
