package sim

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"
	"github.com/tenurekv/tenure/sim/simnet"
)

// The gossip rows of the trade-off table take minutes: only with -tradeoff.
var (
	flagTradeoff      = flag.Bool("tradeoff", false, "run TestTradeoffGossip's seeded batch (minutes)")
	flagTradeoffSeeds = flag.Int("tradeoff-seeds", 10, "seeds per row of TestTradeoffGossip")
)

// Shape of the trade-off runs: a 3-server pool with 12 client agents (15
// members, as a seeded run has), four holders per session configuration,
// TTL sessions at 10 s.
const (
	tradeoffHolders = 4
	tradeoffTTL     = 10 * time.Second
	detectWindow    = 60 * time.Second  // how long a stopped holder is watched
	lossWindow      = 120 * time.Second // how long every link loses packets
)

func tradeoffConfig(seed uint64) workload.Config {
	cfg := workload.DefaultConfig(seed)
	cfg.ClientsPerGroup = tradeoffHolders
	cfg.Groups = []workload.LockGroup{
		sceneGroup("serf", core.ChecksSerf, 0, 0),
		sceneGroup("ttl", core.ChecksTTL, tradeoffTTL, 0),
		sceneGroup("none", core.ChecksNone, 0, 0),
	}
	return cfg
}

// holders makes one actor per client agent, creates its session (client i
// in its group's configuration) and keeps each TTL session renewed every
// TTL/2 (retrying a failed renew after a second) until its stop channel is
// closed. It returns the actors and their stop channels; wait ends when
// every renewer has returned.
func holders(s *scene, groups []workload.LockGroup) (actors []*actor, stops []chan struct{}, wait func()) {
	done := make(chan struct{}, len(s.Hdr.Agents))
	renewers := 0
	for i := range s.Hdr.Agents {
		g := groups[i/tradeoffHolders]
		a := s.actor(fmt.Sprintf("h-%s-%d", g.Name, i%tradeoffHolders))
		a.Create(g)
		stop := make(chan struct{})
		actors, stops = append(actors, a), append(stops, stop)
		if g.Config.TTL == 0 {
			continue
		}
		renewers++
		go func() {
			defer func() { done <- struct{}{} }()
			next := g.Config.TTL / 2
			for {
				select {
				case <-stop:
					return
				case <-time.After(next):
				}
				r := a.Renew()
				switch {
				case r.Outcome == core.OutOK && !r.Found:
					return // the session is gone
				case r.Outcome == core.OutOK:
					next = g.Config.TTL / 2
				default:
					next = time.Second
				}
			}
		}()
	}
	return actors, stops, func() {
		for range renewers {
			<-done
		}
	}
}

// detectionRun stops one holder's host of configuration mode (the seed
// picks which, and when in its renew cycle) by kind, and watches for
// detectWindow.
func detectionRun(t *testing.T, seed uint64, kind core.FaultKind, mode int) *workload.Result {
	cfg := tradeoffConfig(seed)
	return runSceneCfg(t, cfg, func(s *scene) {
		actors, stops, wait := holders(s, cfg.Groups)
		r := core.Stream(seed, fmt.Sprintf("tradeoff/%s/%d", kind, mode))
		time.Sleep(core.Between(r, time.Second, tradeoffTTL))
		i := mode*tradeoffHolders + r.IntN(tradeoffHolders)
		a := actors[i]
		close(stops[i])
		host := []string{a.w.Name, a.agent}
		f := core.Fault{ID: 1, Kind: kind, Dur: detectWindow}
		var heal func()
		switch kind {
		case core.FaultClientCrash:
			_ = s.Net.Pause(a.w.Name)
			s.inj.Mark(f, "start", host, "killed")
			s.inj.CrashAgent(a.agent)
		case core.FaultClientPause:
			_ = s.Net.Pause(a.w.Name)
			_ = s.Net.Pause(a.agent)
			s.inj.Mark(f, "start", host, "paused")
			heal = func() {
				_ = s.Net.Resume(a.agent)
				_ = s.Net.Resume(a.w.Name)
			}
		case core.FaultClientPartition:
			var rest []string
			for _, n := range s.Cl.PoolNames() {
				if n != a.agent {
					rest = append(rest, n)
				}
			}
			_ = s.Net.Partition(host, rest)
			s.inj.Mark(f, "start", host, "cut off from every server and agent")
			heal = s.Net.Heal
		}
		time.Sleep(detectWindow)
		if heal != nil {
			heal()
		}
		s.inj.Mark(f, "end", nil, "")
		for j, st := range stops {
			if j != i {
				close(st)
			}
		}
		wait()
	})
}

// lossRun makes every link lose the share loss of its messages for
// lossWindow, with every holder alive, and returns the run and the
// window's bounds.
func lossRun(t *testing.T, seed uint64, loss float64) (res *workload.Result, from, to time.Duration) {
	cfg := tradeoffConfig(seed)
	res = runSceneCfg(t, cfg, func(s *scene) {
		_, stops, wait := holders(s, cfg.Groups)
		time.Sleep(2 * time.Second)
		f := core.Fault{ID: 1, Kind: core.FaultPoolLoss, Dur: lossWindow, Rate: loss}
		link := simnet.Link{Latency: time.Millisecond, Jitter: 2 * time.Millisecond}
		lossy := link
		lossy.DropRate = loss
		_ = s.Net.SetDefaultLink(lossy)
		s.inj.Mark(f, "start", nil, fmt.Sprintf("every link loses %.0f%%", 100*loss))
		from = s.Rec.Elapsed()
		time.Sleep(lossWindow)
		to = s.Rec.Elapsed()
		_ = s.Net.SetDefaultLink(link)
		s.inj.Mark(f, "end", nil, "")
		for _, st := range stops {
			close(st)
		}
		wait()
	})
	return res, from, to
}

// slowRun starves one serf holder's agent (the seed picks which) for
// lossWindow: every message between it and the rest of the pool is late by
// delay (the slow-agent fault).
func slowRun(t *testing.T, seed uint64, delay time.Duration) (res *workload.Result, from, to time.Duration) {
	cfg := tradeoffConfig(seed)
	res = runSceneCfg(t, cfg, func(s *scene) {
		actors, stops, wait := holders(s, cfg.Groups)
		time.Sleep(2 * time.Second)
		a := actors[core.Stream(seed, "tradeoff/slow").IntN(tradeoffHolders)]
		f := core.Fault{ID: 1, Kind: core.FaultSlowAgent, Dur: lossWindow, Param: delay}
		link := simnet.Link{Latency: delay, Jitter: 2 * time.Millisecond}
		for _, o := range s.Cl.PoolNames() {
			if o != a.agent {
				_ = s.Net.SetLink(a.agent, o, link)
				_ = s.Net.SetLink(o, a.agent, link)
			}
		}
		s.inj.Mark(f, "start", []string{a.agent}, "every message to and from the pool late by "+delay.String())
		from = s.Rec.Elapsed()
		time.Sleep(lossWindow)
		to = s.Rec.Elapsed()
		s.Net.ResetLinks()
		s.inj.Mark(f, "end", nil, "")
		for _, st := range stops {
			close(st)
		}
		wait()
	})
	return res, from, to
}

// TestTradeoffGossip measures the gossip rows of the trade-off table over a
// seeded batch: detection of a killed, paused and partitioned holder per
// session configuration, false positives at 0, 5, 20 (and 40) % loss on
// every link, and with one agent slow by 0.2 to 5 s (Lifeguard's case).
// Every run is also checked. Long; run it with
//
//	go test ./sim -run TestTradeoffGossip -tradeoff [-tradeoff-seeds N]
func TestTradeoffGossip(t *testing.T) {
	if !*flagTradeoff {
		t.Skip("long: run with -tradeoff")
	}
	table := checks.NewGossipTradeoff()
	check := func(res *workload.Result, what string) {
		for _, v := range checks.RunChecks(res.Events) {
			t.Errorf("%s: %v", what, v)
		}
	}
	for i := range *flagTradeoffSeeds {
		seed := *flagFirst + uint64(i)
		for _, kind := range []core.FaultKind{core.FaultClientCrash, core.FaultClientPause, core.FaultClientPartition} {
			for mode := range 3 {
				res := detectionRun(t, seed, kind, mode)
				check(res, fmt.Sprintf("seed %d %s mode %d", seed, kind, mode))
				table.AddDetection(res.Events)
			}
		}
		for _, loss := range []float64{0, 0.05, 0.2, 0.4} {
			res, from, to := lossRun(t, seed, loss)
			check(res, fmt.Sprintf("seed %d loss %.2f", seed, loss))
			table.AddLoss(fmt.Sprintf("loss %.0f%%", 100*loss), res.Events, from, to)
		}
		for _, d := range []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 3 * time.Second, 5 * time.Second} {
			res, from, to := slowRun(t, seed, d)
			check(res, fmt.Sprintf("seed %d slow agent %v", seed, d))
			table.AddLoss("slow agent "+d.String(), res.Events, from, to)
		}
		t.Logf("seed %d done", seed)
	}
	table.Print(os.Stdout)
}
