package workload

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// worker is one client process: it holds at most one session and contends
// for its group's lock, guarding writes to the resources with it. It is
// deliberately naive about time: it believes it holds the lock until its
// own clock says the TTL has run out since its last successful renew.
type Worker struct {
	Name   string
	Api    *ApiClient
	plan   *clientPlan
	Group  LockGroup
	Node   string // the session's node: the client's first agent
	Agent  *core.ClientAgent
	Res    *http.Client
	Rec    *core.Recorder
	Clock  *core.ClientClock
	stopAt time.Duration

	Session   string
	behavior  model.Behavior
	Seq       model.Sequencer
	Holding   bool
	LastRenew time.Time // client clock
	writes    int
	ModIdx    map[string]uint64
	// checkUp and lastPass track the agent TTL check (Group.Config.AgentCheck):
	// registered, and when the client last passed it, on its own clock.
	checkUp  bool
	lastPass time.Time
	queries  int

	// agentAlive is set when a crash stopped only the process: its agent
	// runs on, and so does its TTL check's clock.
	agentAlive bool

	// acl draws the forbidden attempts of a run with ACLs on (nil
	// otherwise); otherKey is the lock key its token may not read.
	acl      *aclPlan
	otherKey string

	mu          sync.Mutex
	pausedUntil time.Duration
	dead        bool
	crashed     bool // set when the client actually stopped for good
}

// pause makes the client stop at its next checkpoint until the virtual
// time until (the network is frozen separately).
func (w *Worker) pause(until time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pausedUntil = max(w.pausedUntil, until)
}

// kill makes the client exit at its next checkpoint without cleaning up.
func (w *Worker) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
}

// checkpoint is where a pause takes effect: between deciding and acting.
// It reports false once the client is dead.
func (w *Worker) checkpoint() bool {
	w.mu.Lock()
	until, dead := w.pausedUntil, w.dead
	w.mu.Unlock()
	if dead {
		return false
	}
	if now := w.Rec.Elapsed(); until > now {
		time.Sleep(until - now)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.dead
}

func (w *Worker) Value() string {
	w.writes++
	return fmt.Sprintf("%s#%d", w.Name, w.writes)
}

// believes is the naive client's idea of whether it holds the lock.
func (w *Worker) Believes() bool {
	if !w.Holding {
		return false
	}
	if ttl := w.Group.Config.TTL; ttl > 0 {
		return w.Clock.Now().Before(w.LastRenew.Add(ttl))
	}
	return true
}

func (w *Worker) lostSession() {
	w.Session, w.Holding = "", false
}

// run is the client's main loop until stopAt; then a live client cleans up.
func (w *Worker) Run() {
	for w.Rec.Elapsed() < w.stopAt {
		if !w.checkpoint() {
			w.markCrashed()
			return
		}
		w.step()
		w.Clock.Sleep(w.plan.Think())
	}
	if !w.checkpoint() {
		w.markCrashed()
		return
	}
	w.cleanup()
}

func (w *Worker) markCrashed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crashed = true
}

func (w *Worker) isCrashed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crashed
}

func (w *Worker) step() {
	if !w.maybePass() {
		return
	}
	if w.acl != nil {
		if kind, ok := w.acl.forbidden(); ok {
			w.forbiddenStep(kind, w.otherKey)
		}
	}
	if w.Session == "" {
		w.behavior = w.plan.Behavior()
		cs := w.Group.Config.Create(w.Node, w.Name, w.behavior)
		r := w.Api.Create(cs)
		if r.Outcome == core.OutOK {
			w.Session, w.LastRenew = r.SessionID, w.Clock.Now()
			if w.plan.BindQuery() {
				w.queries++
				w.Api.CreateQuery(model.PreparedQuery{Name: fmt.Sprintf("%s-q%d", w.Name, w.queries), Session: w.Session,
					Service: model.ServiceQuery{Service: core.AgentCheckService}})
			}
		}
		return
	}
	w.maybeRenew()
	if w.Session == "" {
		return
	}
	switch w.plan.Next(w.Believes()) {
	case stepKV:
		w.kvStep()
	case stepWork:
		if !w.Holding {
			w.acquire()
		}
		if w.Holding {
			w.work()
		}
	case stepRelease:
		r := w.Api.Kv(model.KVOp{Verb: model.KVUnlock, Key: w.Group.Key, Session: w.Session, Value: []byte(w.Value())})
		if r.Outcome == core.OutOK || r.Outcome == core.OutFail {
			w.Holding = false
		}
	case stepDestroy:
		r := w.Api.Destroy(w.Session)
		if r.Outcome == core.OutOK || r.Outcome == core.OutFail {
			w.lostSession()
		}
	case stepIdle:
	}
}

// agentCheckEvery is how often, as a share of the check's TTL on the
// client's own clock, a client passes its agent TTL check: at half the TTL,
// as applications commonly do. A step's think time and a retry's backoff
// come on top, so on a true clock the check lapses only when a step
// stalls (a slow resource link); a slow clock (client-clock-rate) or a
// paused process lets it expire for real.
const agentCheckEvery = 2

// maybePass registers the agent TTL check once, then passes it when half
// of its TTL has gone by on the client's clock. It reports false while the
// check is not registered yet: no session may bind to it before.
func (w *Worker) maybePass() bool {
	ttl := w.Group.Config.AgentCheck
	if ttl == 0 {
		return true
	}
	if !w.checkUp {
		before := w.Clock.Now()
		if r := w.Api.RegisterCheck(core.AgentCheckID, ttl); r.Outcome == core.OutOK {
			w.checkUp, w.lastPass = true, before
		}
		return w.checkUp
	}
	if w.Clock.Now().Before(w.lastPass.Add(ttl / agentCheckEvery)) {
		return true
	}
	before := w.Clock.Now()
	if r := w.Api.PassCheck(core.AgentCheckID); r.Outcome == core.OutOK {
		w.lastPass = before
	}
	return true
}

func (w *Worker) maybeRenew() {
	ttl := w.Group.Config.TTL
	if ttl == 0 || w.Clock.Now().Before(w.LastRenew.Add(ttl/2)) {
		return
	}
	before := w.Clock.Now()
	r := w.Api.Renew(w.Session)
	switch {
	case r.Outcome == core.OutOK && r.Found:
		w.LastRenew = before
	case r.Outcome == core.OutOK:
		w.lostSession() // 404: the session is gone (S20)
	}
}

func (w *Worker) acquire() {
	if w.plan.UseTxnLock() {
		r := w.Api.Txn([]model.KVOp{{Verb: model.KVLock, Key: w.Group.Key, Session: w.Session, Value: []byte(w.Value())}})
		switch {
		case r.Outcome == core.OutOK && r.OK && len(r.Entries) == 1:
			w.Holding, w.Seq = true, r.Entries[0].Sequencer()
		case r.Outcome == core.OutOK && !r.LockDelay && len(r.TxnErrors) > 0 && IsInvalidSession(r.TxnErrors[0].What):
			w.lostSession()
		default:
			w.Clock.Sleep(w.plan.RetryAfter())
		}
		return
	}
	r := w.Api.Kv(model.KVOp{Verb: model.KVLock, Key: w.Group.Key, Session: w.Session, Value: []byte(w.Value())})
	switch {
	case r.Outcome == core.OutOK && r.OK:
		// The answer names the holding period it granted (S64).
		w.Holding, w.Seq = true, r.Entries[0].Sequencer()
	case r.Outcome == core.OutFail && IsInvalidSession(r.Err):
		w.lostSession()
	default:
		w.Clock.Sleep(w.plan.RetryAfter())
	}
}

func IsInvalidSession(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "invalid session")
}

// work is check-then-act: the client checks its belief, then (possibly
// after a pause) writes to both resources.
func (w *Worker) work() {
	if !w.Believes() {
		w.Holding = false // the naive client thinks its TTL ran out
		return
	}
	if !w.checkpoint() {
		return
	}
	v := w.Value()
	w.WriteRes(core.ResUnfenced, "", v)
	mode := core.FenceToken
	if w.plan.FenceByTxn() {
		mode = core.FenceTxn
	}
	if status := w.WriteRes(core.ResFenced, mode, v); status == http.StatusConflict {
		w.Holding = false // the fence says we are stale
	}
}

// resWriteWait is how long a client waits for a resource's answer. It is
// long enough for a write on a slow link (2×latency to connect and send) to
// arrive, late, as a delayed packet would.
const resWriteWait = 30 * time.Second

func (w *Worker) WriteRes(res, mode, value string) int {
	q := url.Values{}
	q.Set("res", res)
	q.Set("mode", mode)
	q.Set("client", w.Name)
	q.Set("key", w.Seq.Key)
	q.Set("session", w.Seq.Session)
	q.Set("index", strconv.FormatUint(w.Seq.LockIndex, 10))
	q.Set("value", value)
	ctx, cancel := context.WithTimeout(context.Background(), resWriteWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+core.ResAddr+"/write?"+q.Encode(), nil)
	if err != nil {
		return 0
	}
	resp, err := w.Res.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (w *Worker) kvStep() {
	verb, key := w.plan.KVOp("")
	switch verb {
	case model.KVGet:
		if r := w.Api.Get(key); r.Outcome == core.OutOK {
			w.ModIdx[key] = 0
			if r.Found {
				w.ModIdx[key] = r.Entries[0].ModifyIndex
			}
		}
	case model.KVCAS:
		w.Api.Kv(model.KVOp{Verb: model.KVCAS, Key: key, Index: w.ModIdx[key], Value: []byte(w.Value())})
	case model.KVDelete:
		w.Api.Kv(model.KVOp{Verb: model.KVDelete, Key: key})
	default:
		w.Api.Kv(model.KVOp{Verb: model.KVSet, Key: key, Value: []byte(w.Value())})
	}
}

// cleanup releases the lock and destroys the session, retrying unknown
// outcomes, so that only crashed clients leave locks behind.
func (w *Worker) cleanup() {
	for try := 0; w.Session != "" && try < 10; try++ {
		r := w.Api.Destroy(w.Session)
		if r.Outcome == core.OutOK || r.Outcome == core.OutFail {
			w.lostSession()
			return
		}
		time.Sleep(time.Second)
	}
}
