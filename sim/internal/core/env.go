package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tenurekv/tenure/sim/simnet"
)

// Startup timing shared by every driver, in virtual time.
const (
	startupLimit  = 30 * time.Second // the cluster must elect and register by then
	WorkloadDelay = 2 * time.Second  // after registration, before clients start
)

// Base is what every run starts from: the simulated network, the recorder
// whose first event is the run's header, and the cluster, every server
// registered. T0 is when the driver's clients may start.
type Base struct {
	Net *simnet.Network
	Rec *Recorder
	Hdr RunHeader
	Cl  *Cluster
	T0  time.Duration
}

// Start boots the cluster hdr describes (servers adjusted or deliberately
// broken by v, if set) and waits until every server has registered itself.
// netTrace records every network message in the trace (large); withGossip
// runs LAN gossip among the servers (failure detection) and starts a client
// agent for each of hdr.Agents, waiting until each is registered passing.
// Call Close when done.
func Start(hdr RunHeader, v *Variant, netTrace, withGossip bool) (*Base, error) {
	rec := NewRecorder()
	// Settle: a resumed node takes its held messages one at a time
	// (simnet.Options.Settle), and a resumed server its held timers
	// (pauseClock.resume).
	netOpts := simnet.Options{Seed: hdr.Seed, Link: simnet.Link{Latency: time.Millisecond, Jitter: 2 * time.Millisecond},
		Settle: newSettler().Settle}
	if netTrace {
		netOpts.OnEvent = func(e simnet.Event) { rec.Add(Event{Kind: KindNet, Msg: e.String()}) }
	}
	network, err := simnet.New(netOpts)
	if err != nil {
		return nil, fmt.Errorf("sim: network: %w", err)
	}
	b := &Base{Net: network, Rec: rec, Hdr: hdr}
	rec.Add(Event{Kind: KindRun, Run: &b.Hdr})
	if b.Cl, err = NewCluster(network, rec, hdr.Seed, hdr.Servers, hdr.Clocks, v, withGossip, hdr.Agents, hdr.ACL); err != nil {
		network.Close()
		return nil, err
	}
	if err := WaitRegistered(b.Cl); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Cl.waitAgentsPassing(startupLimit); err != nil {
		b.Close()
		return nil, err
	}
	time.Sleep(WorkloadDelay)
	b.T0 = rec.Elapsed()
	return b, nil
}

// Close shuts down whatever is still running; safe after a shutdown.
func (b *Base) Close() {
	if b.Cl != nil {
		_ = b.Cl.Shutdown()
	}
	b.Net.Close()
}

// PlanServerClocks names the servers n1…nN and draws their clocks: exact
// without skew, otherwise off by up to ±5 s and drifting up to ±5 %. It
// returns the slowest rate, which stretches every bound.
func PlanServerClocks(hdr *RunHeader, servers int, skew bool, r *rand.Rand) (minRate float64) {
	minRate = 1.0
	for i := range servers {
		name := fmt.Sprintf("n%d", i+1)
		hdr.Servers = append(hdr.Servers, name)
		ck := ClockSkew{Rate: 1}
		if skew {
			ck = ClockSkew{Offset: Between(r, -5*time.Second, 5*time.Second), Rate: math.Round((0.95+0.1*r.Float64())*1e6) / 1e6}
		}
		minRate = min(minRate, ck.Rate)
		hdr.Clocks[name] = ck
	}
	return minRate
}

// WaitRegistered waits until a leader exists and every server registered.
func WaitRegistered(cl *Cluster) error {
	deadline := time.After(startupLimit)
	for _, s := range cl.Servers {
		select {
		case <-s.Current().Registered():
		case <-deadline:
			return fmt.Errorf("sim: cluster not registered within %v", startupLimit)
		}
	}
	return nil
}
