package workload

import (
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/simnet"
)

// workerFaults are a seeded run's clients as fault targets: each client
// fault hits the client its pick names.
type workerFaults []*Worker

func (ws workerFaults) StartClientFault(in *core.Injector, f core.Fault) (func(), bool) {
	if len(ws) == 0 {
		// A shrunk scenario may keep a client fault and no client: what
		// reaches here is aimed at a client, and there is none to hit.
		in.Mark(f, "start", nil, "no client: ignored")
		return nil, true
	}
	w := ws[f.Pick%uint64(len(ws))]
	switch f.Kind {
	case core.FaultClientPause:
		if w.Group.Config.AgentCheck > 0 && ProcessOnly(f, len(ws)) {
			// The process stops (a GC pause); its agent runs on and lets
			// the TTL check the process no longer passes expire.
			w.pause(in.T0 + f.End())
			in.Mark(f, "start", []string{w.Name}, "process only: its agent runs on")
			return func() {}, true
		}
		// The whole host stops (a stopped VM): the process, and its
		// agent's network, so the pool hears nothing from it meanwhile.
		resume := in.PauseHost(w.Name, w.Node)
		w.pause(in.T0 + f.End())
		in.Mark(f, "start", []string{w.Name, w.Node}, "")
		return resume, true
	case core.FaultClientCrash:
		if w.Group.Config.AgentCheck > 0 && ProcessOnly(f, len(ws)) {
			// The process dies; its agent lives on, and its TTL check,
			// passed no more, goes critical there.
			w.kill()
			w.mu.Lock()
			w.agentAlive = true
			w.mu.Unlock()
			in.Mark(f, "start", []string{w.Name}, "process only: its agent runs on")
			return nil, true
		}
		// The host dies: the process and its agent, which does not leave.
		w.kill()
		in.Mark(f, "start", []string{w.Name, w.Node}, "")
		in.CrashAgent(w.Node)
		return nil, true
	case core.FaultClientPartition:
		host := []string{w.Name, w.Node}
		var rest []string
		for _, n := range in.Cl.PoolNames() {
			if n != w.Node {
				rest = append(rest, n)
			}
		}
		_ = in.Net.Partition(host, rest)
		in.Mark(f, "start", host, "cut off from every server and agent")
		return in.Net.Heal, true
	case core.FaultSlowLink:
		_ = in.Net.SetLink(w.Name, core.ResNode, simnet.Link{Latency: f.Param})
		in.Mark(f, "start", []string{w.Name}, "to "+core.ResNode+" "+f.Param.String())
		return in.Net.ResetLinks, true
	case core.FaultClientClockRate:
		w.Clock.SetRate(f.Rate)
		in.Mark(f, "start", []string{w.Name}, "client clock rate")
		return func() { w.Clock.SetRate(0) }, true
	}
	return nil, false
}
