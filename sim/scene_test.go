package sim

import (
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/model"
)

// A scene is a scripted run for the named scenario tests: the real cluster
// and resources of a seeded run, but clients (actors) that do exactly what
// the script says, when it says, and faults applied by the script. The
// trace is checked by the same checks as a seeded run.
type scene struct {
	*env
	inj *injector
}

// runScene runs script in a fresh bubble on a 3-server cluster whose
// sessions are described by groups, and returns the finished run.
func runScene(t *testing.T, seed uint64, groups []lockGroup, script func(s *scene)) *Result {
	t.Helper()
	return runSceneOn(t, seed, groups, nil, script)
}

// runSceneOn is runScene on servers adjusted (or deliberately broken) by v.
func runSceneOn(t *testing.T, seed uint64, groups []lockGroup, v *Variant, script func(s *scene)) *Result {
	t.Helper()
	cfg := defaultConfig(seed)
	cfg.Variant = v
	// No fault kinds: server clocks are exact unless the script skews one.
	cfg.Groups, cfg.Schedule, cfg.Faults = groups, []Fault{}, nil
	var res *Result
	var err error
	synctest.Test(t, func(t *testing.T) {
		//lint:ignore SA1019 raft draws election jitter from the global source; seeding it makes the scene repeat.
		rand.Seed(int64(seed))
		var e *env
		if e, err = startEnv(cfg); err != nil {
			return
		}
		defer e.close()
		s := &scene{env: e, inj: &injector{cl: e.cl, net: e.net, rec: e.rec, t0: e.t0}}
		script(s)
		e.net.Heal()
		e.net.ResetLinks()
		res, err = e.finish(cfg)
	})
	if err != nil {
		t.Fatalf("scene: %v", err)
	}
	return res
}

// actor is a scripted client. It talks to the servers through its agent and
// to the resources through its own network node, like a worker.
type actor struct {
	s     *scene
	w     *worker
	agent string
}

func (s *scene) actor(name, agent string) *actor {
	i := slices.Index(s.hdr.Servers, agent)
	clk := newClientClock(0, 1)
	w := &worker{
		name:   name,
		api:    &apiClient{name: name, rec: s.rec, http: &http.Client{Transport: simTransport(s.net, name)}, servers: s.hdr.Servers, agent: max(i, 0), clock: clk, timeout: 5 * time.Second},
		node:   agent,
		res:    &http.Client{Transport: simTransport(s.net, name)},
		rec:    s.rec,
		clock:  clk,
		modIdx: map[string]uint64{},
	}
	return &actor{s: s, w: w, agent: agent}
}

// create makes the actor's session from a group's configuration, retrying
// while the cluster has no leader (for up to 30s).
func (a *actor) create(g lockGroup) string {
	r := a.w.api.create(g.Config.Create(a.agent, a.w.name, model.BehaviorRelease))
	for try := 0; (r.Outcome == OutUnknown || r.Outcome == OutNotApplied) && try < 30; try++ {
		time.Sleep(time.Second)
		r = a.w.api.create(g.Config.Create(a.agent, a.w.name, model.BehaviorRelease))
	}
	if r.Outcome != OutOK {
		panic(fmt.Sprintf("%s: create: %+v", a.w.name, r))
	}
	a.w.group, a.w.session, a.w.lastRenew = g, r.SessionID, a.w.clock.Now()
	return r.SessionID
}

// lock tries a txn lock of the actor's group key once; on success the
// actor holds the sequencer it got.
func (a *actor) lock() *Ret {
	r := a.w.api.txn([]model.KVOp{{Verb: model.KVLock, Key: a.w.group.Key, Session: a.w.session, Value: []byte(a.w.value())}})
	if r.Outcome == OutOK && r.OK && len(r.Entries) == 1 {
		a.w.holding, a.w.seq = true, r.Entries[0].Sequencer()
	}
	return r
}

// lockRetry retries lock every period until it succeeds or limit passes,
// and returns the refusals it got on the way.
func (a *actor) lockRetry(period, limit time.Duration) []*Ret {
	var refused []*Ret
	for end := a.s.rec.Elapsed() + limit; a.s.rec.Elapsed() < end; time.Sleep(period) {
		r := a.lock()
		if a.w.holding {
			return refused
		}
		refused = append(refused, r)
	}
	panic(fmt.Sprintf("%s: no lock within %v", a.w.name, limit))
}

func (a *actor) release() *Ret {
	r := a.w.api.kv(model.KVOp{Verb: model.KVUnlock, Key: a.w.group.Key, Session: a.w.session, Value: []byte(a.w.value())})
	a.w.holding = false
	return r
}

func (a *actor) renew() *Ret {
	r := a.w.api.renew(a.w.session)
	if r.Outcome == OutOK && r.Found {
		a.w.lastRenew = a.w.clock.Now()
	}
	return r
}

// write sends one value to a resource with the actor's sequencer and
// returns the value, to find the write in the trace.
func (a *actor) write(res, mode string) string {
	v := a.w.value()
	a.w.writeRes(res, mode, v)
	return v
}

// pause stops the actor's network for d (its process sleeps meanwhile in
// the script: a GC pause or a SIGSTOP).
func (a *actor) pause(d time.Duration) {
	_ = a.s.net.Pause(a.w.name)
	time.Sleep(d)
	_ = a.s.net.Resume(a.w.name)
}

// sceneWrite finds the resource write of value.
func sceneWrite(t *testing.T, res *Result, resource, value string) ResWrite {
	t.Helper()
	for _, e := range res.Events {
		if e.Kind == KindWrite && e.Write.Resource == resource && e.Write.Value == value {
			return *e.Write
		}
	}
	t.Fatalf("no %s write of %q in the trace", resource, value)
	return ResWrite{}
}

// writeAt is when the write of value reached resource.
func writeAt(t *testing.T, res *Result, resource, value string) time.Duration {
	t.Helper()
	for _, e := range res.Events {
		if e.Kind == KindWrite && e.Write.Resource == resource && e.Write.Value == value {
			return e.At
		}
	}
	t.Fatalf("no %s write of %q in the trace", resource, value)
	return 0
}

// expectWrites asserts each write's verdict.
func expectWrites(t *testing.T, res *Result, resource string, accepted bool, values ...string) {
	t.Helper()
	for _, v := range values {
		if w := sceneWrite(t, res, resource, v); w.Accepted != accepted {
			t.Errorf("%s write %q by %s (seq %d/%s): accepted = %v, want %v (%s)", resource, v, w.Client, w.Seq.LockIndex, w.Seq.Session, w.Accepted, accepted, w.Reason)
		}
	}
}

// staleAt reports whether seq's holding (by the servers) had ended by t.
func staleAt(res *Result, seq model.Sequencer, t time.Duration) bool {
	tn := newIndex(res.Events).holdings()[seq]
	return tn != nil && tn.End >= 0 && tn.End < t
}

// sceneClean runs every check (linearizability included) and fails on any
// violation; it logs which checks ran.
func sceneClean(t *testing.T, res *Result) Evaluation {
	t.Helper()
	ev := Evaluate(res, 20*time.Second)
	var names []string
	for _, c := range checksFor(seededRun) {
		names = append(names, c.name)
	}
	names = append(names, CheckLinearizable)
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
func sceneGroup(name string, mode CheckMode, ttl, lockDelay time.Duration) lockGroup {
	return lockGroup{Name: name, Config: SessionConfig{Checks: mode, TTL: ttl, LockDelay: lockDelay}, Key: "lock/" + name}
}
