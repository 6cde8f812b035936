package workload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

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
	Faults   []core.FaultKind
	// MaxTTL bounds the groups' TTLs (at least 10s).
	MaxTTL time.Duration
	// Variant, if set, is a deliberately broken server.
	Variant *core.Variant
	// Schedule, if set, replaces the seeded fault schedule (named scenarios).
	Schedule []core.Fault
	// Groups, if set, replaces the six standard session configurations.
	Groups []LockGroup
	// NetTrace records every network message in the trace (large).
	NetTrace bool
	// ACL runs the cluster with ACLs on, default deny, and gives each
	// client a least-privilege token (acl.go).
	ACL bool
}

// defaultConfig is what `go test ./sim -seed N` runs.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Servers: 3, ClientsPerGroup: 2, Duration: 60 * time.Second,
		Faults: core.AllFaultKinds, MaxTTL: 15 * time.Second}
}

// Result is what a run produced.
type Result struct {
	Config  Config
	Header  core.RunHeader
	Events  []core.Event
	Digest  string
	Virtual time.Duration
	Net     simnet.Stats
}

// Timing of a run, in virtual time.
const (
	probeEvery = time.Second
	// gossipDetect bounds memberlist's LAN detection among three servers:
	// a probe every 1 s, a 500 ms probe timeout, then at least 4 s of
	// suspicion (CONSUL.md §13); measured 5.5-7.8 s in the simulator.
	gossipDetect = 10 * time.Second
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
	e, err := StartEnv(cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	rec, network, cl, hdr, t0 := e.Rec, e.Net, e.Cl, e.Hdr, e.T0

	workers := newWorkers(cfg, hdr, rec, network, t0)
	for _, w := range workers {
		w.Agent = cl.Agent(w.Node)
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.Run() }()
	}
	inj := &core.Injector{Cl: cl, Net: network, Rec: rec, Clients: workerFaults(workers), T0: t0}
	var fwg sync.WaitGroup
	for _, f := range hdr.Faults {
		fwg.Add(1)
		go func() { defer fwg.Done(); inj.Run(f) }()
	}
	fwg.Wait()
	wg.Wait()
	network.Heal()
	network.ResetLinks()
	healed := rec.Elapsed()

	// Liveness: every key must become acquirable within the bound.
	rec.Add(core.Event{Kind: core.KindNote, Msg: core.NoteLiveness})
	noteExclusions(cl, rec, workers, hdr)
	probe(rec, network, hdr)
	finalReads(rec, network, hdr)
	awaitAgentRecords(cl, rec, hdr, healed)
	for _, s := range cl.Servers {
		if s.Current() != nil {
			rec.Add(core.Event{Kind: core.KindNote, Node: s.Name, Msg: "shutdown"})
		}
	}
	return e.Finish(cfg)
}

// env is a running cluster with its network, recorder and resources: what
// a seeded run and a scripted scenario share.
type Env struct {
	*core.Base
	res    *core.Resources
	resSrv *http.Server
}

// startEnv plans the run, boots the cluster, waits until every server has
// registered itself and serves the resources. Call close when done.
func StartEnv(cfg Config) (*Env, error) {
	base, err := core.Start(planRun(cfg), cfg.Variant, cfg.NetTrace, true)
	if err != nil {
		return nil, err
	}
	e := &Env{Base: base}
	rec, network := e.Rec, e.Net
	if e.Hdr.ACL != nil {
		if err := createACLTokens(network, rec, e.Hdr); err != nil {
			e.Close()
			return nil, err
		}
	}

	e.res = core.NewResources(rec, nil)
	e.res.Check = resourceChecker(rec, network, e.Hdr.Servers, managementToken(e.Hdr))
	resLn, err := network.Listen(core.ResAddr)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("sim: resource listener: %w", err)
	}
	e.resSrv = &http.Server{Handler: e.res.Handler(5 * time.Second)}
	go func() { _ = e.resSrv.Serve(resLn) }()
	return e, nil
}

// finish shuts the servers down and returns the run's result.
func (e *Env) Finish(cfg Config) (*Result, error) {
	if err := e.Cl.Shutdown(); err != nil {
		return nil, fmt.Errorf("sim: shutdown: %w", err)
	}
	events := e.Rec.Events()
	return &Result{Config: cfg, Header: e.Hdr, Events: events, Digest: core.Digest(events), Virtual: e.Rec.Elapsed(), Net: e.Net.Stats()}, nil
}

// close stops whatever is still running; safe after finish.
func (e *Env) Close() {
	if e.resSrv != nil {
		e.resSrv.Close()
	}
	e.Base.Close()
}

// planRun draws everything the seed decides before the run starts.
func planRun(cfg Config) core.RunHeader {
	hdr := core.RunHeader{Seed: cfg.Seed, Clocks: map[string]core.ClockSkew{}, Groups: map[string]core.GroupInfo{}}
	if cfg.Variant != nil {
		hdr.Variant = cfg.Variant.Name
	}
	// Runs with a clock fault also start with clocks that disagree: servers
	// off and drifting, clients off by seconds.
	serverSkew := slices.Contains(cfg.Faults, core.FaultServerClockStep)
	clientSkew := slices.Contains(cfg.Faults, core.FaultClientClockRate)
	r := core.Stream(cfg.Seed, "clocks")
	minRate := core.PlanServerClocks(&hdr, cfg.Servers, serverSkew, r)
	groups := cfg.Groups
	if groups == nil {
		groups = NewLockGroups(cfg.Seed, cfg.MaxTTL)
	}
	maxTTL, maxLD, maxCheck := time.Duration(0), time.Duration(0), time.Duration(0)
	for _, g := range groups {
		hdr.Groups[g.Name] = core.GroupInfo{Config: g.Config, Key: g.Key}
		maxTTL, maxLD = max(maxTTL, g.Config.TTL), max(maxLD, g.Config.LockDelay)
		maxCheck = max(maxCheck, g.Config.AgentCheck)
		for j := range cfg.ClientsPerGroup {
			name := fmt.Sprintf("c-%s-%d", g.Name, j)
			// Each client runs on its own node, whose client agent it talks to.
			agent := core.AgentName(len(hdr.Clients))
			hdr.Agents = append(hdr.Agents, agent)
			hdr.Clients = append(hdr.Clients, core.ClientInfo{Name: name, Group: g.Name, Agent: agent})
			ck := core.ClockSkew{Rate: 1}
			if clientSkew {
				ck = core.ClockSkew{Offset: core.Between(r, -5*time.Second, 5*time.Second), Rate: 1}
			}
			hdr.Clocks[name] = ck
		}
	}
	if cfg.ACL {
		hdr.ACL = planACL(cfg.Seed, &hdr)
	}
	hdr.Faults = cfg.Schedule
	if hdr.Faults == nil {
		hdr.Faults = core.NewSchedule(cfg.Seed, core.SeededSchedule, cfg.Faults, 5*time.Second, cfg.Duration)
	}
	b, err := core.DeriveBounds(core.Bounds{Election: 10 * time.Second, Detect: gossipDetect, MaxTTL: maxTTL,
		AgentDetect:   core.GossipDetectBound(len(hdr.Servers) + len(hdr.Agents)),
		StaleView:     core.GossipStaleBound(len(hdr.Servers) + len(hdr.Agents)),
		TTLMultiplier: model.DefaultTTLMultiplier, MaxLockDelay: maxLD, MinRate: minRate, Slack: 5 * time.Second,
		AgentCheckTTL: maxCheck, AgentSync: core.AgentSyncBound, AgentSyncQuiet: time.Second})
	if err == nil {
		hdr.Bounds = b
	}
	return hdr
}

func newWorkers(cfg Config, hdr core.RunHeader, rec *core.Recorder, network *simnet.Network, t0 time.Duration) []*Worker {
	var out []*Worker
	for _, ci := range hdr.Clients {
		gi := hdr.Groups[ci.Group]
		sk := hdr.Clocks[ci.Name]
		clk := core.NewClientClock(sk.Offset, sk.Rate)
		w := &Worker{
			Name: ci.Name,
			// Only its own agent: the session's node is the agent's by
			// default (the create body names none).
			Api:    &ApiClient{Name: ci.Name, Rec: rec, Http: &http.Client{Transport: core.SimTransport(network, ci.Name)}, Servers: []string{ci.Agent}, Clock: clk, Timeout: 5 * time.Second, AgentNode: ci.Agent},
			plan:   newClientPlan(cfg.Seed, ci.Name),
			Group:  LockGroup{Name: ci.Group, Config: gi.Config, Key: gi.Key},
			Node:   ci.Agent,
			Res:    &http.Client{Transport: core.SimTransport(network, ci.Name)},
			Rec:    rec,
			Clock:  clk,
			stopAt: t0 + cfg.Duration,
			ModIdx: map[string]uint64{},
		}
		if hdr.ACL != nil {
			w.Api.Token = hdr.ACL.Tokens[ci.Name].SecretID
			w.acl = newACLPlan(cfg.Seed, ci.Name)
			w.otherKey = otherGroupKey(hdr, ci.Group)
		}
		out = append(out, w)
	}
	return out
}

// managementToken is the run's management secret, "" with ACLs off.
func managementToken(hdr core.RunHeader) string {
	if hdr.ACL == nil {
		return ""
	}
	return hdr.ACL.Management
}

// otherGroupKey is the lock key of the group after group, in name order:
// one a client of group may not read.
func otherGroupKey(hdr core.RunHeader, group string) string {
	names := core.SortedMapKeys(hdr.Groups)
	i := slices.Index(names, group)
	return hdr.Groups[names[(i+1)%len(names)]].Key
}

// resourceChecker asks the cluster, with a check-sequencer txn, whether a
// sequencer is valid. Each key gets its own recorded client, so checks on
// different keys may overlap without making one client's ops concurrent.
func resourceChecker(rec *core.Recorder, network *simnet.Network, servers []string, token string) core.SequencerChecker {
	var mu sync.Mutex
	clients := map[string]*ApiClient{}
	return func(ctx context.Context, seq model.Sequencer) error {
		mu.Lock()
		c := clients[seq.Key]
		if c == nil {
			c = &ApiClient{Name: core.ResNode + "/" + seq.Key, Rec: rec, Http: &http.Client{Transport: core.SimTransport(network, core.ResNode)}, Servers: servers, Timeout: 3 * time.Second, Token: token}
			clients[seq.Key] = c
		}
		mu.Unlock()
		r := c.Txn([]model.KVOp{{Verb: model.KVCheckSequencer, Key: seq.Key, Session: seq.Session, Index: seq.LockIndex}})
		switch {
		case r.Outcome == core.OutOK && r.OK:
			return nil
		case r.Outcome == core.OutOK && len(r.TxnErrors) > 0:
			return errors.New(r.TxnErrors[0].What)
		}
		return fmt.Errorf("check-sequencer outcome unknown: %s", r.Err)
	}
}

// noteExclusions lists the keys nothing will ever free: held by a crashed
// client's session that has neither a TTL nor its node's serfHealth (its
// agent crashed with it, so a serf session goes), nor an agent TTL check
// on an agent that outlived the process (an agent that died with it
// leaves the check passing in the catalog, as Consul's does).
func noteExclusions(cl *core.Cluster, rec *core.Recorder, workers []*Worker, hdr core.RunHeader) {
	crashed := map[string]bool{}
	for _, w := range workers {
		w.mu.Lock()
		agentAlive := w.agentAlive
		w.mu.Unlock()
		if agentAlive && w.Group.Config.AgentCheck > 0 {
			continue
		}
		if w.isCrashed() && w.Session != "" && w.Group.Config.TTL == 0 && w.Group.Config.Checks != core.ChecksSerf {
			crashed[w.Session] = true
		}
	}
	for _, name := range core.SortedMapKeys(hdr.Groups) {
		g := hdr.Groups[name]
		for _, w := range workers {
			if crashed[w.Session] && w.Group.Key == g.Key {
				rec.Add(core.Event{Kind: core.KindNote, Msg: core.NoteExcludePrefix + g.Key, Node: w.Name})
				break
			}
		}
	}
}

// probe acquires every group key with a fresh session (no checks, no
// lock-delay), retrying until it succeeds or the liveness bound has passed.
func probe(rec *core.Recorder, network *simnet.Network, hdr core.RunHeader) {
	c := &ApiClient{Name: core.ProberClient, Rec: rec, Http: &http.Client{Transport: core.SimTransport(network, core.ProberClient)}, Servers: hdr.Servers, Timeout: 5 * time.Second, Token: managementToken(hdr)}
	deadline := rec.Elapsed() + hdr.Bounds.Acquire + 5*time.Second
	var sid string
	for sid == "" && rec.Elapsed() < deadline {
		r := c.Create(model.CreateSession{Name: core.ProberClient, Node: hdr.Servers[0], Checks: []string{}, Behavior: model.BehaviorRelease})
		if r.Outcome == core.OutOK {
			sid = r.SessionID
			break
		}
		time.Sleep(probeEvery)
	}
	if sid == "" {
		return
	}
	for _, name := range core.SortedMapKeys(hdr.Groups) {
		key := hdr.Groups[name].Key
		excluded := false
		for _, e := range rec.Events() {
			if e.Kind == core.KindNote && e.Msg == core.NoteExcludePrefix+key {
				excluded = true
			}
		}
		for !excluded && rec.Elapsed() < deadline {
			r := c.Kv(model.KVOp{Verb: model.KVLock, Key: key, Session: sid, Value: []byte("probe")})
			if r.Outcome == core.OutOK && r.OK {
				c.Kv(model.KVOp{Verb: model.KVUnlock, Key: key, Session: sid})
				break
			}
			time.Sleep(probeEvery)
		}
	}
	c.Destroy(sid)
}

// awaitAgentRecords keeps the run going until every running client agent's
// node record is in the leader's state, or until S63's bound for it has
// passed since the faults healed. A record that is missing then stays
// missing past the bound, so the trace's end lets checkAgentRecordWritten
// judge it, however late in the run the last fault healed.
func awaitAgentRecords(cl *core.Cluster, rec *core.Recorder, hdr core.RunHeader, healed time.Duration) {
	b := hdr.Bounds
	if len(hdr.Agents) == 0 || b.AgentSync <= 0 {
		return
	}
	deadline := healed + b.Election + b.AgentSync + b.Slack
	for !cl.AgentRecordsWritten() && rec.Elapsed() <= deadline {
		time.Sleep(probeEvery)
	}
}

// finalReads reads every key once more, for the no-lost-writes check.
func finalReads(rec *core.Recorder, network *simnet.Network, hdr core.RunHeader) {
	c := &ApiClient{Name: core.FinalClient, Rec: rec, Http: &http.Client{Transport: core.SimTransport(network, core.FinalClient)}, Servers: hdr.Servers, Timeout: 5 * time.Second, Token: managementToken(hdr)}
	keys := append([]string(nil), kvKeys...)
	for _, name := range core.SortedMapKeys(hdr.Groups) {
		keys = append(keys, hdr.Groups[name].Key)
	}
	for _, k := range keys {
		for try := 0; try < 5; try++ {
			if r := c.Get(k); r.Outcome == core.OutOK {
				break
			}
			time.Sleep(time.Second)
		}
	}
}
