package sim

import (
	"context"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// injector carries out a fault schedule on a running cluster. Each fault runs
// in its own goroutine: it sleeps until its start, acts, sleeps until its
// end, and heals. Targets come from the fault's Pick, or from the cluster's
// state at the start (the current leader). Faults on servers and the
// network are its own; faults on clients go to the driver (clients).
type injector struct {
	cl      *cluster
	net     *simnet.Network
	rec     *Recorder
	clients clientFaults // nil: client faults are ignored
	t0      time.Duration
}

// clientFaults carries out the fault kinds aimed at a driver's clients:
// which client a fault hits is the one thing that differs between drivers
// (any client by the fault's pick, or whoever holds the lock).
type clientFaults interface {
	// startClientFault applies f and returns how to heal it (nil: nothing
	// to heal); ok is false for a kind that is not a client fault.
	startClientFault(in *injector, f Fault) (heal func(), ok bool)
}

func (in *injector) sleepUntil(t time.Duration) {
	if d := in.t0 + t - in.rec.Elapsed(); d > 0 {
		time.Sleep(d)
	}
}

func (in *injector) mark(f Fault, phase string, targets []string, note string) {
	in.rec.Add(Event{Kind: KindFault, Fault: &FaultMark{ID: f.ID, Kind: f.Kind, Phase: phase, Targets: targets, Note: note}})
}

func (in *injector) serverByPick(p uint64) *server {
	return in.cl.servers[p%uint64(len(in.cl.servers))]
}

// leaderOrPick is the current leader, or a seeded server if there is none.
func (in *injector) leaderOrPick(p uint64) *server {
	if l := in.cl.leader(); l != nil {
		return l
	}
	return in.serverByPick(p)
}

// falsePositiveEvery is how often a false positive re-marks its node critical.
const falsePositiveEvery = 500 * time.Millisecond

func (in *injector) run(f Fault) {
	in.sleepUntil(f.At)
	heal := in.start(f)
	in.sleepUntil(f.End())
	if heal != nil {
		heal()
	}
	in.mark(f, "end", nil, "")
}

// start applies the fault and returns how to heal it.
func (in *injector) start(f Fault) func() {
	switch f.Kind {
	case FaultPartition:
		names := in.cl.peersNames()
		// Rotate by Pick, then cut off the first (n-1)/2 (at least one).
		k := max(1, (len(names)-1)/2)
		off := int(f.Pick % uint64(len(names)))
		rot := append(append([]string(nil), names[off:]...), names[:off]...)
		minority, majority := rot[:k], rot[k:]
		_ = in.net.Partition(minority, majority)
		in.mark(f, "start", minority, "minority side")
		return in.net.Heal
	case FaultLeaderIsolation:
		l := in.leaderOrPick(f.Pick)
		_ = in.net.Isolate(l.name)
		in.mark(f, "start", []string{l.name}, "")
		return in.net.Heal
	case FaultFlapping:
		s := in.serverByPick(f.Pick)
		in.mark(f, "start", []string{s.name}, "")
		period := max(f.Param, 100*time.Millisecond)
		for cut := true; in.rec.Elapsed()+period < in.t0+f.End(); cut = !cut {
			if cut {
				_ = in.net.Isolate(s.name)
			} else {
				in.net.Heal()
			}
			time.Sleep(period)
		}
		return in.net.Heal
	case FaultServerClockStep:
		s := in.serverByPick(f.Pick)
		s.clock.Step(f.Param)
		in.mark(f, "start", []string{s.name}, "wall clock step "+f.Param.String())
		return func() { s.clock.Step(-f.Param) }
	case FaultFalsePositive:
		// The node re-registers itself passing within milliseconds (its
		// anti-entropy), so one critical write would be a blip: the fault
		// keeps re-marking it for its whole length, as a failure detector
		// that keeps suspecting a live node would.
		s := in.serverByPick(f.Pick)
		in.mark(f, "start", []string{s.name}, "serfHealth critical while alive, re-marked every "+falsePositiveEvery.String())
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				in.setSerf(s, model.HealthCritical, falsePositiveEvery)
				select {
				case <-stop:
					return
				case <-time.After(falsePositiveEvery):
				}
			}
		}()
		return func() {
			close(stop)
			<-done
			in.setSerf(s, model.HealthPassing, 10*time.Second)
		}
	case FaultServerPause:
		s := in.serverByPick(f.Pick)
		_ = in.net.Pause(s.name)
		s.gate.pause()
		in.mark(f, "start", []string{s.name}, "")
		return func() {
			s.gate.resume()
			_ = in.net.Resume(s.name)
		}
	case FaultCrashRestart, FaultLeaderKill:
		s := in.serverByPick(f.Pick)
		if f.Kind == FaultLeaderKill {
			s = in.leaderOrPick(f.Pick)
		}
		in.mark(f, "start", []string{s.name}, "")
		in.crash(s)
		return func() { in.restart(s) }
	}
	if in.clients != nil {
		if heal, ok := in.clients.startClientFault(in, f); ok {
			return heal
		}
	}
	in.mark(f, "start", nil, "unknown fault kind: ignored")
	return nil
}

func (in *injector) crash(s *server) {
	if err := in.cl.crash(s); err != nil {
		in.rec.Add(Event{Kind: KindNote, Node: s.name, Msg: "crash error: " + err.Error()})
	}
	in.rec.Add(Event{Kind: KindNote, Node: s.name, Msg: NoteCrashPrefix + s.name})
}

func (in *injector) restart(s *server) {
	if err := in.cl.start(s); err != nil {
		in.rec.Add(Event{Kind: KindNote, Node: s.name, Msg: "restart error: " + err.Error()})
		return
	}
	in.rec.Add(Event{Kind: KindNote, Node: s.name, Msg: NoteRestartPrefix + s.name})
}

// setSerf writes s's serfHealth status through the leader, as Consul's serf
// reconciliation would; it gives up after limit.
func (in *injector) setSerf(s *server, status model.Health, limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := model.Command{Register: &model.Register{Node: s.name, Address: s.httpAddr(),
		Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: "Serf Health Status", Status: status}}}}
	if err := in.cl.applyOnLeader(ctx, cmd); err != nil {
		in.rec.Add(Event{Kind: KindNote, Node: s.name, Msg: "serfHealth " + string(status) + " not written: " + err.Error()})
	}
}

func (c *cluster) peersNames() []string {
	var out []string
	for _, p := range c.peers {
		out = append(out, p.Name)
	}
	return out
}
