package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/simnet"
)

// Options describe one run. The zero value of each field is its default.
type Options struct {
	// Seed fixes the fault schedule, the network's delays and every
	// process's Rand.
	Seed uint64
	// Servers is the cluster's size: 3 (default) or 5.
	Servers int
	// Duration is how long, in virtual time, the processes run; at its
	// end their context is cancelled. Faults start at 5 s and heal 10 s
	// before it. Default 60 s; at least 20 s.
	Duration time.Duration
	// Faults are the kinds the seed draws the schedule from: nil is
	// AllFaults, NoFaults none.
	Faults []FaultKind
	// Schedule, if not nil, replaces the seed's schedule (a shrunk run's,
	// or one written by hand; Faults is then ignored).
	Schedule []Fault
	// Processes, if not nil, names the processes that start (a shrunk
	// run's); the others the set-up adds with Go are left out.
	Processes []string
	// ACL turns the servers' ACLs on, default deny. The servers write an
	// initial management token drawn from the seed, and every process's
	// API and Recipe carry it: a process that wants to see its code under
	// a narrower token creates one and a client with it (Process.Client).
	ACL bool
	// Invariants are checked over the run's History, alongside tenure's
	// own properties.
	Invariants []Invariant
	// ArtifactDir is where Check writes a failed run's evidence, a folder
	// per run. Default: tenure-sim under os.TempDir().
	ArtifactDir string
	// NoShrink keeps Check from shrinking a failure.
	NoShrink bool
	// ShrinkRuns is how many reruns a shrink candidate must fail, every
	// one, to count as failing (default 2): a seed's rerun follows the
	// same schedule but Go's scheduler may order one instant differently.
	ShrinkRuns int
}

// Defaults of Options.
const (
	DefaultServers    = 3
	DefaultDuration   = 60 * time.Second
	DefaultShrinkRuns = 2
	minDuration       = faultsFrom + faultsSettle + 5*time.Second
)

// ScenarioEnv names the environment variable that replays a scenario file
// (written beside a failed run's artifacts): Check and Simulate then take
// its seed, servers, duration, schedule and processes instead of their
// Options'.
const ScenarioEnv = "TENURE_SIM_SCENARIO"

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Servers == 0 {
		o.Servers = DefaultServers
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.ShrinkRuns == 0 {
		o.ShrinkRuns = DefaultShrinkRuns
	}
	switch {
	case o.Servers != 3 && o.Servers != 5:
		return o, fmt.Errorf("sim: Options.Servers is %d; want 3 or 5", o.Servers)
	case o.Duration < minDuration:
		return o, fmt.Errorf("sim: Options.Duration is %v; want at least %v (faults start at %v and heal %v before the end)", o.Duration, minDuration, faultsFrom, faultsSettle)
	case o.ShrinkRuns < 0:
		return o, fmt.Errorf("sim: Options.ShrinkRuns is %d; want at least 1", o.ShrinkRuns)
	}
	for _, k := range o.Faults {
		if _, ok := coreKinds[k]; !ok {
			return o, fmt.Errorf("sim: Options.Faults: unknown fault kind %q (known: %v)", k, AllFaults)
		}
	}
	for _, f := range o.Schedule {
		if _, ok := coreKinds[f.Kind]; !ok || f.At < 0 || f.Dur <= 0 {
			return o, fmt.Errorf("sim: Options.Schedule: bad fault %v (known kinds: %v; At must be >= 0 and Dur > 0)", f, AllFaults)
		}
	}
	for i, inv := range o.Invariants {
		if inv.Name == "" || inv.Check == nil {
			return o, fmt.Errorf("sim: Options.Invariants[%d] needs a Name and a Check", i)
		}
	}
	return o, nil
}

// Scenario is a run to replay: what a failed run's scenario.json holds.
type Scenario struct {
	Seed      uint64        `json:"seed"`
	Servers   int           `json:"servers"`
	Duration  time.Duration `json:"duration"`
	Property  string        `json:"property,omitempty"` // the property it failed
	Schedule  []Fault       `json:"schedule"`
	Processes []string      `json:"processes,omitempty"`
	ACL       bool          `json:"acl,omitempty"`
}

// ReadScenario reads a scenario file.
func ReadScenario(path string) (Scenario, error) {
	var sc Scenario
	b, err := os.ReadFile(path)
	if err != nil {
		return sc, fmt.Errorf("sim: scenario: %w", err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sc, fmt.Errorf("sim: scenario %s: %w", path, err)
	}
	if sc.Schedule == nil {
		sc.Schedule = []Fault{}
	}
	return sc, nil
}

// Apply returns o with the scenario's run in place of its own.
func (sc Scenario) Apply(o Options) Options {
	o.Seed, o.Servers, o.Duration, o.ACL = sc.Seed, sc.Servers, sc.Duration, sc.ACL
	o.Schedule, o.Processes = slices.Clone(sc.Schedule), slices.Clone(sc.Processes)
	return o
}

// writeScenarioFile writes a scenario (the harness's Scenario, or
// TestSeeds' shrunk run) as indented JSON, making its folder if need be.
func writeScenarioFile(path string, sc any) error {
	b, err := json.MarshalIndent(sc, "", " ")
	if err != nil {
		return fmt.Errorf("sim: encode scenario: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("sim: write scenario: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("sim: write scenario: %w", err)
	}
	return nil
}

// runState is one run in progress: what its processes share.
type runState struct {
	seed uint64
	net  *simnet.Network
	rec  *core.Recorder
	t0   time.Duration
	acl  *core.ACLSetup // nil with ACLs off

	mu      sync.Mutex
	records []Record
}

func (h *runState) now() time.Duration { return h.rec.Elapsed() - h.t0 }

// record stamps r and keeps it, in the history and, as a note, in the trace
// (so trace.jsonl shows it among the servers' events).
func (h *runState) record(r Record) {
	h.mu.Lock()
	r.At = h.now()
	h.records = append(h.records, r)
	h.mu.Unlock()
	h.rec.Add(core.Event{Kind: core.KindNote, Node: r.Process, Msg: "history: " + r.String()})
}

// outcome is what one run inside the bubble produced.
type outcome struct {
	hdr       core.RunHeader
	events    []core.Event
	t0        time.Duration
	history   History
	schedule  []Fault
	processes []string
	virtual   time.Duration
}

// runOnce runs o (defaults filled in) inside the caller's synctest bubble.
func runOnce(o Options, setup func(*Cluster)) (*outcome, error) {
	c := &Cluster{}
	setup(c)
	if len(c.procs) == 0 {
		return nil, errors.New("sim: the set-up started no process (call Cluster.Go)")
	}
	specs := c.procs
	if o.Processes != nil {
		specs = nil
		for _, name := range o.Processes {
			i := slices.IndexFunc(c.procs, func(s *procSpec) bool { return s.name == name })
			if i < 0 {
				return nil, fmt.Errorf("sim: Options.Processes names %q; the set-up added p1…p%d", name, len(c.procs))
			}
			specs = append(specs, c.procs[i])
		}
	}
	schedule := o.Schedule
	if schedule == nil {
		var err error
		if schedule, err = Schedule(o.Seed, o.Duration, o.Faults, len(specs)); err != nil {
			return nil, err
		}
	}
	hdr := core.RunHeader{Seed: o.Seed, Clocks: map[string]core.ClockSkew{}, Groups: map[string]core.GroupInfo{}}
	core.PlanServerClocks(&hdr, o.Servers, false, core.Stream(o.Seed, "harness-clocks"))
	agents := map[string]string{}
	for _, s := range specs {
		// A process keeps its agent's name whichever others run, so a
		// shrunk run reads like the original.
		agent := core.AgentName(slices.Index(c.procs, s))
		agents[s.name] = agent
		hdr.Agents = append(hdr.Agents, agent)
		hdr.Clients = append(hdr.Clients, core.ClientInfo{Name: s.name, Agent: agent})
		hdr.Clocks[s.name] = core.ClockSkew{Rate: 1}
	}
	for _, f := range schedule {
		hdr.Faults = append(hdr.Faults, f.core())
	}
	if o.ACL {
		hdr.ACL = planACL(o.Seed)
	}

	base, err := core.Start(hdr, nil, false, true)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	if err := awaitACL(base, hdr); err != nil {
		return nil, err
	}
	h := &runState{seed: o.Seed, net: base.Net, rec: base.Rec, t0: base.T0, acl: hdr.ACL}
	procs := make([]*Process, 0, len(specs))
	for _, s := range specs {
		p, err := newProcess(h, s.name, agents[s.name])
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); specs[i].fn(ctx, p) }()
	}
	inj := &core.Injector{Cl: base.Cl, Net: base.Net, Rec: base.Rec, Clients: processFaults{cl: base.Cl, procs: procs}, T0: base.T0}
	var fwg sync.WaitGroup
	for _, f := range hdr.Faults {
		fwg.Add(1)
		go func() { defer fwg.Done(); inj.Run(f) }()
	}
	fwg.Wait()
	if d := o.Duration - h.now(); d > 0 {
		time.Sleep(d)
	}
	end := h.now()
	base.Rec.Add(core.Event{Kind: core.KindNote, Msg: "harness: processes stopped"})
	cancel()
	for _, p := range procs {
		p.release()
	}
	if !waitFor(&wg, processGrace) {
		// A process still waits on a request no context reaches (consul/api's
		// Lock does not cancel its blocking queries): cut every process off,
		// which fails its requests, so that it sees ctx and returns.
		base.Rec.Add(core.Event{Kind: core.KindNote, Msg: fmt.Sprintf("harness: processes still running %v after the end: taken off the network", processGrace)})
		for _, p := range procs {
			_ = base.Net.Down(p.name)
		}
		wg.Wait()
	}
	base.Net.Heal()
	base.Net.ResetLinks()
	if err := base.Cl.Shutdown(); err != nil {
		return nil, fmt.Errorf("sim: shutdown: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return &outcome{hdr: hdr, events: base.Rec.Events(), t0: base.T0, history: History{Records: h.records, End: end},
		schedule: schedule, processes: names, virtual: base.Rec.Elapsed()}, nil
}

// processGrace is how long the processes get to return after their
// context ends before they are cut off; longer than consul/api's blocking
// queries (its Lock waits 15 s a query).
const processGrace = 30 * time.Second

// waitFor waits for wg up to d of virtual time and reports whether it
// ended.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// inBubble runs o once in a fresh synctest bubble.
func inBubble(t *testing.T, o Options, setup func(*Cluster)) (*outcome, error) {
	t.Helper()
	var out *outcome
	var err error
	synctest.Test(t, func(t *testing.T) {
		//lint:ignore SA1019 raft, memberlist and serf no longer draw from the global source (third_party/); seeding it keeps any draw still made there repeatable where the binary honours it.
		rand.Seed(int64(o.Seed))
		out, err = runOnce(o, setup)
	})
	return out, err
}
