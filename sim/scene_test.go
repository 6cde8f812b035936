package sim

import (
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"

	"github.com/tenurekv/tenure/model"
)

// A scene is a scripted run for the named scenario tests: the real cluster
// and resources of a seeded run, but clients (actors) that do exactly what
// the script says, when it says, and faults applied by the script. The
// trace is checked by the same checks as a seeded run.
type scene struct {
	*workload.Env
	inj    *core.Injector
	agents int // client agents handed to actors so far
	pauses int // scripted pauses so far (their fault IDs)
}

// runScene runs script in a fresh bubble on a 3-server cluster whose
// sessions are described by groups, and returns the finished run.
func runScene(t *testing.T, seed uint64, groups []workload.LockGroup, script func(s *scene)) *workload.Result {
	t.Helper()
	return runSceneOn(t, seed, groups, nil, script)
}

// runSceneOn is runScene on servers adjusted (or deliberately broken) by v.
func runSceneOn(t *testing.T, seed uint64, groups []workload.LockGroup, v *core.Variant, script func(s *scene)) *workload.Result {
	t.Helper()
	cfg := workload.DefaultConfig(seed)
	cfg.Variant = v
	cfg.Groups = groups
	return runSceneCfg(t, cfg, script)
}

// runSceneCfg is runScene on cfg's cluster and client agents (its groups
// and clients per group); cfg's faults are left to the script.
func runSceneCfg(t *testing.T, cfg workload.Config, script func(s *scene)) *workload.Result {
	t.Helper()
	seed := cfg.Seed
	// No fault kinds: server clocks are exact unless the script skews one.
	cfg.Schedule, cfg.Faults = []core.Fault{}, nil
	var res *workload.Result
	var err error
	synctest.Test(t, func(t *testing.T) {
		//lint:ignore SA1019 raft, memberlist and serf no longer draw from the global source (third_party/); seeding it keeps any draw still made there repeatable.
		rand.Seed(int64(seed))
		var e *workload.Env
		if e, err = workload.StartEnv(cfg); err != nil {
			return
		}
		defer e.Close()
		s := &scene{Env: e, inj: &core.Injector{Cl: e.Cl, Net: e.Net, Rec: e.Rec, T0: e.T0}}
		script(s)
		e.Net.Heal()
		e.Net.ResetLinks()
		res, err = e.Finish(cfg)
	})
	if err != nil {
		t.Fatalf("scene: %v", err)
	}
	return res
}

// actor is a scripted client. It runs on its own node with its own client
// agent (the next of the run's, in the order actors are made), talks to the
// servers through that agent and to the resources from its own node, like
// a worker.
type actor struct {
	s     *scene
	w     *workload.Worker
	agent string
}

func (s *scene) actor(name string) *actor {
	agent := s.Hdr.Agents[s.agents]
	s.agents++
	clk := core.NewClientClock(0, 1)
	w := &workload.Worker{
		Name:   name,
		Api:    &workload.ApiClient{Name: name, Rec: s.Rec, Http: &http.Client{Transport: core.SimTransport(s.Net, name)}, Servers: []string{agent}, Clock: clk, Timeout: 5 * time.Second, AgentNode: agent},
		Node:   agent,
		Res:    &http.Client{Transport: core.SimTransport(s.Net, name)},
		Rec:    s.Rec,
		Clock:  clk,
		ModIdx: map[string]uint64{},
	}
	return &actor{s: s, w: w, agent: agent}
}

// create makes the actor's session from a group's configuration, retrying
// while the cluster has no leader (for up to 30s).
func (a *actor) Create(g workload.LockGroup) string {
	r := a.w.Api.Create(g.Config.Create(a.agent, a.w.Name, model.BehaviorRelease))
	for try := 0; (r.Outcome == core.OutUnknown || r.Outcome == core.OutNotApplied) && try < 30; try++ {
		time.Sleep(time.Second)
		r = a.w.Api.Create(g.Config.Create(a.agent, a.w.Name, model.BehaviorRelease))
	}
	if r.Outcome != core.OutOK {
		panic(fmt.Sprintf("%s: create: %+v", a.w.Name, r))
	}
	a.w.Group, a.w.Session, a.w.LastRenew = g, r.SessionID, a.w.Clock.Now()
	return r.SessionID
}

// lock tries a txn lock of the actor's group key once; on success the
// actor holds the sequencer it got.
func (a *actor) lock() *core.Ret {
	r := a.w.Api.Txn([]model.KVOp{{Verb: model.KVLock, Key: a.w.Group.Key, Session: a.w.Session, Value: []byte(a.w.Value())}})
	if r.Outcome == core.OutOK && r.OK && len(r.Entries) == 1 {
		a.w.Holding, a.w.Seq = true, r.Entries[0].Sequencer()
	}
	return r
}

// lockRetry retries lock every period until it succeeds or limit passes,
// and returns the refusals it got on the way.
func (a *actor) lockRetry(period, limit time.Duration) []*core.Ret {
	var refused []*core.Ret
	for end := a.s.Rec.Elapsed() + limit; a.s.Rec.Elapsed() < end; time.Sleep(period) {
		r := a.lock()
		if a.w.Holding {
			return refused
		}
		refused = append(refused, r)
	}
	panic(fmt.Sprintf("%s: no lock within %v", a.w.Name, limit))
}

func (a *actor) release() *core.Ret {
	r := a.w.Api.Kv(model.KVOp{Verb: model.KVUnlock, Key: a.w.Group.Key, Session: a.w.Session, Value: []byte(a.w.Value())})
	a.w.Holding = false
	return r
}

func (a *actor) Renew() *core.Ret {
	r := a.w.Api.Renew(a.w.Session)
	if r.Outcome == core.OutOK && r.Found {
		a.w.LastRenew = a.w.Clock.Now()
	}
	return r
}

// write sends one value to a resource with the actor's sequencer and
// returns the value, to find the write in the trace.
func (a *actor) write(res, mode string) string {
	v := a.w.Value()
	a.w.WriteRes(res, mode, v)
	return v
}

// pause stops the actor's host for d: its network and its agent's (its
// process sleeps meanwhile in the script: a stopped VM).
// It is marked as a client-pause fault, for the checks that excuse what a
// paused host's gossip does.
func (a *actor) pause(d time.Duration) {
	a.s.pauses++
	f := core.Fault{ID: 1000 + a.s.pauses, Kind: core.FaultClientPause, Dur: d}
	_ = a.s.Net.Pause(a.w.Name)
	_ = a.s.Net.Pause(a.agent)
	a.s.inj.Mark(f, "start", []string{a.w.Name, a.agent}, "scripted")
	time.Sleep(d)
	_ = a.s.Net.Resume(a.agent)
	_ = a.s.Net.Resume(a.w.Name)
	a.s.inj.Mark(f, "end", nil, "")
}

// sceneWrite finds the resource write of value.
func sceneWrite(t *testing.T, res *workload.Result, resource, value string) core.ResWrite {
	t.Helper()
	for _, e := range res.Events {
		if e.Kind == core.KindWrite && e.Write.Resource == resource && e.Write.Value == value {
			return *e.Write
		}
	}
	t.Fatalf("no %s write of %q in the trace", resource, value)
	return core.ResWrite{}
}

// writeAt is when the write of value reached resource.
func writeAt(t *testing.T, res *workload.Result, resource, value string) time.Duration {
	t.Helper()
	for _, e := range res.Events {
		if e.Kind == core.KindWrite && e.Write.Resource == resource && e.Write.Value == value {
			return e.At
		}
	}
	t.Fatalf("no %s write of %q in the trace", resource, value)
	return 0
}

// expectWrites asserts each write's verdict.
func expectWrites(t *testing.T, res *workload.Result, resource string, accepted bool, values ...string) {
	t.Helper()
	for _, v := range values {
		if w := sceneWrite(t, res, resource, v); w.Accepted != accepted {
			t.Errorf("%s write %q by %s (seq %d/%s): accepted = %v, want %v (%s)", resource, v, w.Client, w.Seq.LockIndex, w.Seq.Session, w.Accepted, accepted, w.Reason)
		}
	}
}

// staleAt reports whether seq's holding (by the servers) had ended by t.
func staleAt(res *workload.Result, seq model.Sequencer, t time.Duration) bool {
	tn := checks.NewIndex(res.Events).Holdings()[seq]
	return tn != nil && tn.End >= 0 && tn.End < t
}

// sceneClean runs every check (linearizability included) and fails on any
// violation; it logs which checks ran.
func sceneClean(t *testing.T, res *workload.Result) checks.Evaluation {
	t.Helper()
	ev := checks.Evaluate(res, 20*time.Second)
	var names []string
	for _, c := range checks.ChecksFor(checks.SeededRun) {
		names = append(names, c.Name)
	}
	names = append(names, checks.CheckLinearizable)
	if len(ev.Violations) > 0 {
		var b strings.Builder
		for _, v := range ev.Violations {
			fmt.Fprintf(&b, "\n  %v", v)
		}
		t.Fatalf("checks failed:%s", b.String())
	}
	t.Logf("checks passed: %s (lin %s, %d ops)", strings.Join(names, ", "), ev.Lin.Verdict, ev.Lin.Ops)
	return ev
}

// sceneGroup is a one-key session configuration for a scene.
func sceneGroup(name string, mode core.CheckMode, ttl, lockDelay time.Duration) workload.LockGroup {
	return workload.LockGroup{Name: name, Config: core.SessionConfig{Checks: mode, TTL: ttl, LockDelay: lockDelay}, Key: "lock/" + name}
}
