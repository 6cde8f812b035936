package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// Config is one simulated run. The same Config always yields the same fault
// schedule and the same client plans.
type Config struct {
	Seed    uint64
	Servers int // 3 or 5
	// ClientsPerGroup is how many clients contend for each group's key.
	ClientsPerGroup int
	// Duration is the virtual length of the workload-and-faults phase; the
	// liveness phase follows.
	Duration time.Duration
	Faults   []FaultKind
	// MaxTTL bounds the groups' TTLs (at least 10s).
	MaxTTL time.Duration
	// Variant, if set, is a deliberately broken server.
	Variant *Variant
	// Schedule, if set, replaces the seeded fault schedule (named scenarios).
	Schedule []Fault
	// Groups, if set, replaces the six standard session configurations.
	Groups []lockGroup
	// NetTrace records every network message in the trace (large).
	NetTrace bool
}

// defaultConfig is what `go test ./sim -seed N` runs.
func defaultConfig(seed uint64) Config {
	return Config{Seed: seed, Servers: 3, ClientsPerGroup: 2, Duration: 60 * time.Second,
		Faults: AllFaultKinds, MaxTTL: 15 * time.Second}
}

// Result is what a run produced.
type Result struct {
	Config  Config
	Header  RunHeader
	Events  []Event
	Digest  string
	Virtual time.Duration
	Net     simnet.Stats
}

// Timing of a run, in virtual time.
const (
	startupLimit  = 30 * time.Second // cluster must elect and register by then
	workloadDelay = 2 * time.Second  // after registration, before clients start
	probeEvery    = time.Second
	failureThresh = 5 * time.Second
)

// Run executes one simulation. It must be called inside a testing/synctest
// bubble: everything it creates belongs to the bubble, and it shuts every
// server and connection down before it returns. It returns an error only if
// the run could not be carried out (the cluster never came up); property
// violations are found afterwards by the checks, over Result.Events.
func Run(cfg Config) (*Result, error) {
	if cfg.Servers < 1 || cfg.ClientsPerGroup < 1 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("sim: bad config: %d servers, %d clients per group, duration %v", cfg.Servers, cfg.ClientsPerGroup, cfg.Duration)
	}
	e, err := startEnv(cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	rec, network, cl, hdr, t0 := e.rec, e.net, e.cl, e.hdr, e.t0

	workers := newWorkers(cfg, hdr, rec, network, t0)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	inj := &injector{cl: cl, net: network, rec: rec, clients: workerFaults(workers), t0: t0}
	var fwg sync.WaitGroup
	for _, f := range hdr.Faults {
		fwg.Add(1)
		go func() { defer fwg.Done(); inj.run(f) }()
	}
	fwg.Wait()
	wg.Wait()
	network.Heal()
	network.ResetLinks()

	// Liveness: every key must become acquirable within the bound.
	rec.Add(Event{Kind: KindNote, Msg: NoteLiveness})
	noteExclusions(cl, rec, workers, hdr)
	probe(rec, network, hdr)
	finalReads(rec, network, hdr)
	for _, s := range cl.servers {
		if s.current() != nil {
			rec.Add(Event{Kind: KindNote, Node: s.name, Msg: "shutdown"})
		}
	}
	return e.finish(cfg)
}

// env is a running cluster with its network, recorder and resources: what
// a seeded run and a scripted scenario share.
type env struct {
	net    *simnet.Network
	rec    *Recorder
	hdr    RunHeader
	cl     *cluster
	res    *Resources
	resSrv *http.Server
	// t0 is when the workload may start: every server is registered.
	t0 time.Duration
}

// startEnv plans the run, boots the cluster, waits until every server has
// registered itself and serves the resources. Call close when done.
func startEnv(cfg Config) (*env, error) {
	rec := newRecorder()
	netOpts := simnet.Options{Seed: cfg.Seed, Link: simnet.Link{Latency: time.Millisecond, Jitter: 2 * time.Millisecond}}
	if cfg.NetTrace {
		netOpts.OnEvent = func(e simnet.Event) { rec.Add(Event{Kind: KindNet, Msg: e.String()}) }
	}
	network, err := simnet.New(netOpts)
	if err != nil {
		return nil, fmt.Errorf("sim: network: %w", err)
	}
	e := &env{net: network, rec: rec, hdr: planRun(cfg)}
	rec.Add(Event{Kind: KindRun, Run: &e.hdr})
	if e.cl, err = newCluster(network, rec, e.hdr.Servers, e.hdr.Clocks, cfg.Variant); err != nil {
		network.Close()
		return nil, err
	}
	if err := waitRegistered(e.cl); err != nil {
		e.close()
		return nil, err
	}
	time.Sleep(workloadDelay)
	e.t0 = rec.Elapsed()

	e.res = newResources(rec, nil)
	e.res.check = resourceChecker(rec, network, e.hdr.Servers)
	resLn, err := network.Listen(resAddr)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("sim: resource listener: %w", err)
	}
	e.resSrv = &http.Server{Handler: e.res.Handler(5 * time.Second)}
	go func() { _ = e.resSrv.Serve(resLn) }()
	return e, nil
}

// finish shuts the servers down and returns the run's result.
func (e *env) finish(cfg Config) (*Result, error) {
	if err := e.cl.shutdown(); err != nil {
		return nil, fmt.Errorf("sim: shutdown: %w", err)
	}
	events := e.rec.Events()
	return &Result{Config: cfg, Header: e.hdr, Events: events, Digest: Digest(events), Virtual: e.rec.Elapsed(), Net: e.net.Stats()}, nil
}

// close stops whatever is still running; safe after finish.
func (e *env) close() {
	if e.resSrv != nil {
		e.resSrv.Close()
	}
	if e.cl != nil {
		_ = e.cl.shutdown()
	}
	e.net.Close()
}

// planServerClocks names the servers n1…nN and draws their clocks: exact
// without skew, otherwise off by up to ±5 s and drifting up to ±5 %. It
// returns the slowest rate, which stretches every bound.
func planServerClocks(hdr *RunHeader, servers int, skew bool, r *rand.Rand) (minRate float64) {
	minRate = 1.0
	for i := range servers {
		name := fmt.Sprintf("n%d", i+1)
		hdr.Servers = append(hdr.Servers, name)
		ck := ClockSkew{Rate: 1}
		if skew {
			ck = ClockSkew{Offset: between(r, -5*time.Second, 5*time.Second), Rate: math.Round((0.95+0.1*r.Float64())*1e6) / 1e6}
		}
		minRate = min(minRate, ck.Rate)
		hdr.Clocks[name] = ck
	}
	return minRate
}

// planRun draws everything the seed decides before the run starts.
func planRun(cfg Config) RunHeader {
	hdr := RunHeader{Seed: cfg.Seed, Clocks: map[string]ClockSkew{}, Groups: map[string]GroupInfo{}}
	if cfg.Variant != nil {
		hdr.Variant = cfg.Variant.Name
	}
	// Runs with a clock fault also start with clocks that disagree: servers
	// off and drifting, clients off by seconds.
	serverSkew := slices.Contains(cfg.Faults, FaultServerClockStep)
	clientSkew := slices.Contains(cfg.Faults, FaultClientClockRate)
	r := stream(cfg.Seed, "clocks")
	minRate := planServerClocks(&hdr, cfg.Servers, serverSkew, r)
	groups := cfg.Groups
	if groups == nil {
		groups = newLockGroups(cfg.Seed, cfg.MaxTTL)
	}
	maxTTL, maxLD := time.Duration(0), time.Duration(0)
	for _, g := range groups {
		hdr.Groups[g.Name] = GroupInfo{Config: g.Config, Key: g.Key}
		maxTTL, maxLD = max(maxTTL, g.Config.TTL), max(maxLD, g.Config.LockDelay)
		for j := range cfg.ClientsPerGroup {
			name := fmt.Sprintf("c-%s-%d", g.Name, j)
			agent := hdr.Servers[(len(hdr.Clients))%len(hdr.Servers)]
			hdr.Clients = append(hdr.Clients, ClientInfo{Name: name, Group: g.Name, Agent: agent})
			ck := ClockSkew{Rate: 1}
			if clientSkew {
				ck = ClockSkew{Offset: between(r, -5*time.Second, 5*time.Second), Rate: 1}
			}
			hdr.Clocks[name] = ck
		}
	}
	hdr.Faults = cfg.Schedule
	if hdr.Faults == nil {
		hdr.Faults = newSchedule(cfg.Seed, seededSchedule, cfg.Faults, 5*time.Second, cfg.Duration)
	}
	b, err := deriveBounds(Bounds{Election: 10 * time.Second, Detect: failureThresh, MaxTTL: maxTTL,
		TTLMultiplier: model.DefaultTTLMultiplier, MaxLockDelay: maxLD, MinRate: minRate, Slack: 5 * time.Second})
	if err == nil {
		hdr.Bounds = b
	}
	return hdr
}

// waitRegistered waits until a leader exists and every server registered.
func waitRegistered(cl *cluster) error {
	deadline := time.After(startupLimit)
	for _, s := range cl.servers {
		select {
		case <-s.current().Registered():
		case <-deadline:
			return fmt.Errorf("sim: cluster not registered within %v", startupLimit)
		}
	}
	return nil
}

func newWorkers(cfg Config, hdr RunHeader, rec *Recorder, network *simnet.Network, t0 time.Duration) []*worker {
	var out []*worker
	for i, ci := range hdr.Clients {
		gi := hdr.Groups[ci.Group]
		sk := hdr.Clocks[ci.Name]
		clk := newClientClock(sk.Offset, sk.Rate)
		agent := i % len(hdr.Servers)
		w := &worker{
			name:   ci.Name,
			api:    &apiClient{name: ci.Name, rec: rec, http: &http.Client{Transport: simTransport(network, ci.Name)}, servers: hdr.Servers, agent: agent, clock: clk, timeout: 5 * time.Second},
			plan:   newClientPlan(cfg.Seed, ci.Name),
			group:  lockGroup{Name: ci.Group, Config: gi.Config, Key: gi.Key},
			node:   ci.Agent,
			res:    &http.Client{Transport: simTransport(network, ci.Name)},
			rec:    rec,
			clock:  clk,
			stopAt: t0 + cfg.Duration,
			modIdx: map[string]uint64{},
		}
		out = append(out, w)
	}
	return out
}

// resourceChecker asks the cluster, with a check-sequencer txn, whether a
// sequencer is valid. Each key gets its own recorded client, so checks on
// different keys may overlap without making one client's ops concurrent.
func resourceChecker(rec *Recorder, network *simnet.Network, servers []string) SequencerChecker {
	var mu sync.Mutex
	clients := map[string]*apiClient{}
	return func(ctx context.Context, seq model.Sequencer) error {
		mu.Lock()
		c := clients[seq.Key]
		if c == nil {
			c = &apiClient{name: resNode + "/" + seq.Key, rec: rec, http: &http.Client{Transport: simTransport(network, resNode)}, servers: servers, timeout: 3 * time.Second}
			clients[seq.Key] = c
		}
		mu.Unlock()
		r := c.txn([]model.KVOp{{Verb: model.KVCheckSequencer, Key: seq.Key, Session: seq.Session, Index: seq.LockIndex}})
		switch {
		case r.Outcome == OutOK && r.OK:
			return nil
		case r.Outcome == OutOK && len(r.TxnErrors) > 0:
			return errors.New(r.TxnErrors[0].What)
		}
		return fmt.Errorf("check-sequencer outcome unknown: %s", r.Err)
	}
}

// noteExclusions lists the keys nothing will ever free: held by a crashed
// client's session that has no TTL (its node, the client's agent, is alive).
func noteExclusions(cl *cluster, rec *Recorder, workers []*worker, hdr RunHeader) {
	crashed := map[string]bool{}
	for _, w := range workers {
		if w.isCrashed() && w.session != "" && w.group.Config.TTL == 0 {
			crashed[w.session] = true
		}
	}
	for _, name := range sortedMapKeys(hdr.Groups) {
		g := hdr.Groups[name]
		for _, w := range workers {
			if crashed[w.session] && w.group.Key == g.Key {
				rec.Add(Event{Kind: KindNote, Msg: NoteExcludePrefix + g.Key, Node: w.name})
				break
			}
		}
	}
}

// probe acquires every group key with a fresh session (no checks, no
// lock-delay), retrying until it succeeds or the liveness bound has passed.
func probe(rec *Recorder, network *simnet.Network, hdr RunHeader) {
	c := &apiClient{name: ProberClient, rec: rec, http: &http.Client{Transport: simTransport(network, ProberClient)}, servers: hdr.Servers, timeout: 5 * time.Second}
	deadline := rec.Elapsed() + hdr.Bounds.Acquire + 5*time.Second
	var sid string
	for sid == "" && rec.Elapsed() < deadline {
		r := c.create(model.CreateSession{Name: ProberClient, Node: hdr.Servers[0], Checks: []string{}, Behavior: model.BehaviorRelease})
		if r.Outcome == OutOK {
			sid = r.SessionID
			break
		}
		time.Sleep(probeEvery)
	}
	if sid == "" {
		return
	}
	for _, name := range sortedMapKeys(hdr.Groups) {
		key := hdr.Groups[name].Key
		excluded := false
		for _, e := range rec.Events() {
			if e.Kind == KindNote && e.Msg == NoteExcludePrefix+key {
				excluded = true
			}
		}
		for !excluded && rec.Elapsed() < deadline {
			r := c.kv(model.KVOp{Verb: model.KVLock, Key: key, Session: sid, Value: []byte("probe")})
			if r.Outcome == OutOK && r.OK {
				c.kv(model.KVOp{Verb: model.KVUnlock, Key: key, Session: sid})
				break
			}
			time.Sleep(probeEvery)
		}
	}
	c.destroy(sid)
}

// finalReads reads every key once more, for the no-lost-writes check.
func finalReads(rec *Recorder, network *simnet.Network, hdr RunHeader) {
	c := &apiClient{name: FinalClient, rec: rec, http: &http.Client{Transport: simTransport(network, FinalClient)}, servers: hdr.Servers, timeout: 5 * time.Second}
	keys := append([]string(nil), KVKeys...)
	for _, name := range sortedMapKeys(hdr.Groups) {
		keys = append(keys, hdr.Groups[name].Key)
	}
	for _, k := range keys {
		for try := 0; try < 5; try++ {
			if r := c.get(k); r.Outcome == OutOK {
				break
			}
			time.Sleep(time.Second)
		}
	}
}
