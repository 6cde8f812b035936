package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// injector carries out a fault schedule on a running cluster. Each fault runs
// in its own goroutine: it sleeps until its start, acts, sleeps until its
// end, and heals. Targets come from the fault's Pick, or from the cluster's
// state at the start (the current leader). Faults on servers and the
// network are its own; faults on clients go to the driver (clients).
type Injector struct {
	Cl      *Cluster
	Net     *simnet.Network
	Rec     *Recorder
	Clients ClientFaults // nil: client faults are ignored
	T0      time.Duration
}

// ClientFaults carries out the fault kinds aimed at a driver's clients:
// which client a fault hits is the one thing that differs between drivers
// (any client by the fault's pick, or whoever holds the lock).
type ClientFaults interface {
	// StartClientFault applies f and returns how to heal it (nil: nothing
	// to heal); ok is false for a kind that is not a client fault.
	StartClientFault(in *Injector, f Fault) (heal func(), ok bool)
}

func (in *Injector) sleepUntil(t time.Duration) {
	if d := in.T0 + t - in.Rec.Elapsed(); d > 0 {
		time.Sleep(d)
	}
}

func (in *Injector) Mark(f Fault, phase string, targets []string, note string) {
	in.Rec.Add(Event{Kind: KindFault, Fault: &FaultMark{ID: f.ID, Kind: f.Kind, Phase: phase, Targets: targets, Note: note}})
}

// PauseHost freezes the network of a client's host: its process and its
// client agent. The returned resume unfreezes the agent first, then the
// process, the one order every driver uses (so that runs replay alike).
func (in *Injector) PauseHost(process, agent string) (resume func()) {
	_ = in.Net.Pause(process)
	_ = in.Net.Pause(agent)
	return func() {
		_ = in.Net.Resume(agent)
		_ = in.Net.Resume(process)
	}
}

func (in *Injector) serverByPick(p uint64) *server {
	return in.Cl.Servers[p%uint64(len(in.Cl.Servers))]
}

// leaderOrPick is the current leader, or a seeded server if there is none.
func (in *Injector) leaderOrPick(p uint64) *server {
	if l := in.Cl.Leader(); l != nil {
		return l
	}
	return in.serverByPick(p)
}

// falsePositiveEvery is how often a false positive re-marks its node critical.
const falsePositiveEvery = 500 * time.Millisecond

func (in *Injector) Run(f Fault) {
	in.sleepUntil(f.At)
	heal := in.Start(f)
	in.sleepUntil(f.End())
	if heal != nil {
		heal()
	}
	in.Mark(f, "end", nil, "")
}

// start applies the fault and returns how to heal it.
func (in *Injector) Start(f Fault) func() {
	switch f.Kind {
	case FaultPartition:
		names := in.Cl.PeersNames()
		// Rotate by Pick, then cut off the first (n-1)/2 (at least one).
		k := max(1, (len(names)-1)/2)
		off := int(f.Pick % uint64(len(names)))
		rot := append(append([]string(nil), names[off:]...), names[:off]...)
		minority, majority := rot[:k], rot[k:]
		_ = in.Net.Partition(minority, majority)
		in.Mark(f, "start", minority, "minority side")
		return in.Net.Heal
	case FaultPoolLoss, FaultOneWay:
		// One member of the pool (a server or a running client agent) and
		// the part of the pool it loses: by Pick, the member and the first
		// server that is not it, or all the others.
		names := in.Cl.PoolNames()
		s := names[f.Pick%uint64(len(names))]
		var others []string
		for _, n := range names {
			if n != s {
				others = append(others, n)
			}
		}
		if (f.Pick/uint64(len(names)))%2 == 0 {
			others = others[:1]
		}
		if f.Kind == FaultOneWay {
			_ = in.Net.PartitionOneWay([]string{s}, others)
			in.Mark(f, "start", []string{s}, "cannot send to "+strings.Join(others, ","))
			return in.Net.Heal
		}
		for _, o := range others {
			_ = in.Net.SetLink(s, o, simnet.Link{Latency: time.Millisecond, Jitter: 2 * time.Millisecond, DropRate: f.Rate})
			_ = in.Net.SetLink(o, s, simnet.Link{Latency: time.Millisecond, Jitter: 2 * time.Millisecond, DropRate: f.Rate})
		}
		in.Mark(f, "start", []string{s}, fmt.Sprintf("%.0f%% loss with %s", 100*f.Rate, strings.Join(others, ",")))
		return in.Net.ResetLinks
	case FaultSlowAgent:
		agents := in.Cl.AliveAgentNames()
		if len(agents) == 0 {
			in.Mark(f, "start", nil, "no running client agent: ignored")
			return nil
		}
		a := agents[f.Pick%uint64(len(agents))]
		link := simnet.Link{Latency: f.Param, Jitter: 2 * time.Millisecond}
		for _, o := range in.Cl.PoolNames() {
			if o != a {
				_ = in.Net.SetLink(a, o, link)
				_ = in.Net.SetLink(o, a, link)
			}
		}
		in.Mark(f, "start", []string{a}, "every message to and from the pool late by "+f.Param.String())
		return in.Net.ResetLinks
	case FaultLeaderIsolation:
		l := in.leaderOrPick(f.Pick)
		_ = in.Net.Isolate(l.Name)
		in.Mark(f, "start", []string{l.Name}, "")
		return in.Net.Heal
	case FaultFlapping:
		s := in.serverByPick(f.Pick)
		in.Mark(f, "start", []string{s.Name}, "")
		period := max(f.Param, 100*time.Millisecond)
		for cut := true; in.Rec.Elapsed()+period < in.T0+f.End(); cut = !cut {
			if cut {
				_ = in.Net.Isolate(s.Name)
			} else {
				in.Net.Heal()
			}
			time.Sleep(period)
		}
		return in.Net.Heal
	case FaultServerClockStep:
		s := in.serverByPick(f.Pick)
		s.clock.Step(f.Param)
		in.Mark(f, "start", []string{s.Name}, "wall clock step "+f.Param.String())
		return func() { s.clock.Step(-f.Param) }
	case FaultFalsePositive:
		// The node re-registers itself passing within milliseconds (its
		// anti-entropy), so one critical write would be a blip: the fault
		// keeps re-marking it for its whole length, as a failure detector
		// that keeps suspecting a live node would.
		// Clients' sessions are bound to their agents' nodes: with client
		// agents the fault marks one of them, else a server.
		node := in.serverByPick(f.Pick).Name
		if agents := in.Cl.Agents; len(agents) > 0 {
			node = agents[f.Pick%uint64(len(agents))].Name
		}
		// The address the leader's reconcile records, so that the write
		// changes the check alone.
		addr := in.Cl.gossip.catalogAddr(node)
		in.Mark(f, "start", []string{node}, "serfHealth critical while alive, re-marked every "+falsePositiveEvery.String())
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				in.setSerf(node, addr, model.HealthCritical, falsePositiveEvery)
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
			in.setSerf(node, addr, model.HealthPassing, 10*time.Second)
		}
	case FaultServerPause:
		s := in.serverByPick(f.Pick)
		_ = in.Net.Pause(s.Name)
		s.gate.pause()
		in.Mark(f, "start", []string{s.Name}, "")
		return func() {
			// The held timers first, each settled, then the held messages
			// one at a time: an order of the simulation's, not the
			// scheduler's (TestDiverge, seeds 7 and 138).
			s.gate.resume(in.Net.Settle)
			_ = in.Net.Resume(s.Name)
		}
	case FaultPowerLoss:
		targets, scope := in.powerLossTargets(f.Pick)
		in.Mark(f, "start", serverNames(targets), scope)
		for _, s := range targets {
			in.Cl.PowerLoss(s)
			in.Rec.Add(Event{Kind: KindNote, Node: s.Name, Msg: NoteCrashPrefix + s.Name})
		}
		return func() {
			for _, s := range targets {
				in.Restart(s)
			}
		}
	case FaultFsyncError:
		s := in.serverByPick(f.Pick)
		var told sync.Once
		s.disk.OnFailedSync(func(path string) {
			told.Do(func() { in.Rec.Add(Event{Kind: KindNote, Node: s.Name, Msg: NoteSyncFailedPrefix + path}) })
		})
		s.disk.FailSyncs(errInjectedEIO)
		in.Mark(f, "start", []string{s.Name}, "every fsync fails")
		return func() {
			s.disk.OnFailedSync(nil)
			// The operator replaces the disk: what had been synced is
			// there, nothing else (the pages a failed fsync left dirty may
			// be gone).
			in.Cl.PowerLoss(s)
			s.disk.FailSyncs(nil)
			in.Restart(s)
		}
	case FaultDiskStall:
		s := in.serverByPick(f.Pick)
		s.disk.SetSyncDelay(f.Param)
		in.Mark(f, "start", []string{s.Name}, "every fsync takes "+f.Param.String())
		return func() {
			s.disk.SetSyncDelay(0)
			// An fsync that started before the heal still sleeps; it ends
			// before the next fault (a crash must not meet it: raft-wal
			// holds a mutex across it, see simdisk.SetSyncDelay).
			time.Sleep(f.Param)
		}
	case FaultCrashRestart, FaultLeaderKill:
		s := in.serverByPick(f.Pick)
		if f.Kind == FaultLeaderKill {
			s = in.leaderOrPick(f.Pick)
		}
		in.Mark(f, "start", []string{s.Name}, "")
		in.Crash(s)
		return func() { in.Restart(s) }
	}
	if in.Clients != nil {
		if heal, ok := in.Clients.StartClientFault(in, f); ok {
			return heal
		}
	}
	in.Mark(f, "start", nil, "unknown fault kind: ignored")
	return nil
}

// errInjectedEIO is the fsync-error fault's failure.
var errInjectedEIO = errors.New("input/output error (injected)")

// powerLossTargets are the servers a power loss cuts, by pick: one, a
// minority (the first (n-1)/2 from a rotation), or all of them.
func (in *Injector) powerLossTargets(pick uint64) ([]*server, string) {
	all := in.Cl.Servers
	off := int(pick % uint64(len(all)))
	rot := append(append([]*server(nil), all[off:]...), all[:off]...)
	switch (pick / uint64(len(all))) % 3 {
	case 0:
		return rot[:1], "one server"
	case 1:
		return rot[:max(1, (len(all)-1)/2)], "a minority"
	}
	return rot, "every server"
}

func serverNames(ss []*server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func (in *Injector) Crash(s *server) {
	in.Cl.Crash(s)
	in.Rec.Add(Event{Kind: KindNote, Node: s.Name, Msg: NoteCrashPrefix + s.Name})
}

// CrashAgent crashes the client agent named node (if it is one) and notes
// it as a crash of that node, so the checks bound its sessions' end.
func (in *Injector) CrashAgent(node string) {
	a := in.Cl.Agent(node)
	if a == nil {
		return
	}
	if err := in.Cl.CrashAgent(a); err != nil {
		in.Rec.Add(Event{Kind: KindNote, Node: node, Msg: "crash error: " + err.Error()})
	}
	in.Rec.Add(Event{Kind: KindNote, Node: node, Msg: NoteCrashPrefix + node})
}

func (in *Injector) Restart(s *server) {
	if err := in.Cl.Start(s); err != nil {
		in.Rec.Add(Event{Kind: KindNote, Node: s.Name, Msg: "restart error: " + err.Error()})
		return
	}
	in.Rec.Add(Event{Kind: KindNote, Node: s.Name, Msg: NoteRestartPrefix + s.Name})
}

// setSerf writes node's serfHealth status through the leader, as Consul's
// serf reconciliation would: the check alone, with SkipNodeUpdate, so the
// node's record (ID, meta, tagged addresses) stays its agent's (S62, S63).
// It gives up after limit.
func (in *Injector) setSerf(node, addr string, status model.Health, limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := model.Command{Register: &model.Register{Node: node, Address: addr, SkipNodeUpdate: true,
		Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: "Serf Health Status", Status: status}}}}
	if err := in.Cl.applyOnLeader(ctx, cmd); err != nil {
		in.Rec.Add(Event{Kind: KindNote, Node: node, Msg: "serfHealth " + string(status) + " not written: " + err.Error()})
	}
}

func (c *Cluster) PeersNames() []string {
	var out []string
	for _, p := range c.peers {
		out = append(out, p.Name)
	}
	return out
}

// PoolNames lists the gossip pool's members a fault may pick: the servers,
// then the client agents still running.
func (c *Cluster) PoolNames() []string {
	return append(c.PeersNames(), c.AliveAgentNames()...)
}

// AliveAgentNames lists the client agents that have not crashed.
func (c *Cluster) AliveAgentNames() []string {
	var out []string
	for _, a := range c.Agents {
		if a.Alive() {
			out = append(out, a.Name)
		}
	}
	return out
}
