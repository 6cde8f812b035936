package sim

import "github.com/tenurekv/tenure/sim/simnet"

// workerFaults are a seeded run's clients as fault targets: each client
// fault hits the client its pick names.
type workerFaults []*worker

func (ws workerFaults) startClientFault(in *injector, f Fault) (func(), bool) {
	w := ws[f.Pick%uint64(len(ws))]
	switch f.Kind {
	case FaultClientPause:
		_ = in.net.Pause(w.name)
		w.pause(in.t0 + f.End())
		in.mark(f, "start", []string{w.name}, "")
		return func() { _ = in.net.Resume(w.name) }, true
	case FaultClientCrash:
		w.kill()
		in.mark(f, "start", []string{w.name}, "")
		return nil, true
	case FaultSlowLink:
		_ = in.net.SetLink(w.name, resNode, simnet.Link{Latency: f.Param})
		in.mark(f, "start", []string{w.name}, "to "+resNode+" "+f.Param.String())
		return in.net.ResetLinks, true
	case FaultClientClockRate:
		w.clock.setRate(f.Rate)
		in.mark(f, "start", []string{w.name}, "client clock rate")
		return func() { w.clock.setRate(0) }, true
	}
	return nil, false
}
