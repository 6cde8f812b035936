package workload

import (
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/simnet"
)

// workerFaults are a seeded run's clients as fault targets: each client
// fault hits the client its pick names.
type workerFaults []*Worker

func (ws workerFaults) StartClientFault(in *core.Injector, f core.Fault) (func(), bool) {
	w := ws[f.Pick%uint64(len(ws))]
	switch f.Kind {
	case core.FaultClientPause:
		_ = in.Net.Pause(w.Name)
		w.pause(in.T0 + f.End())
		in.Mark(f, "start", []string{w.Name}, "")
		return func() { _ = in.Net.Resume(w.Name) }, true
	case core.FaultClientCrash:
		w.kill()
		in.Mark(f, "start", []string{w.Name}, "")
		return nil, true
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
