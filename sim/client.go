package sim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurekv/tenure/model"
)

// resAddr is the resources' address on the simulated network.
const (
	resNode = "res"
	resAddr = resNode + ":9000"
)

// worker is one client process: it holds at most one session and contends
// for its group's lock, guarding writes to the resources with it. It is
// deliberately naive about time: it believes it holds the lock until its
// own clock says the TTL has run out since its last successful renew.
type worker struct {
	name   string
	api    *apiClient
	plan   *clientPlan
	group  lockGroup
	node   string // the session's node: the client's first agent
	res    *http.Client
	rec    *Recorder
	clock  *clientClock
	stopAt time.Duration

	session   string
	behavior  model.Behavior
	seq       model.Sequencer
	holding   bool
	lastRenew time.Time // client clock
	writes    int
	modIdx    map[string]uint64

	mu          sync.Mutex
	pausedUntil time.Duration
	dead        bool
	crashed     bool // set when the client actually stopped for good
}

// pause makes the client stop at its next checkpoint until the virtual
// time until (the network is frozen separately).
func (w *worker) pause(until time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pausedUntil = max(w.pausedUntil, until)
}

// kill makes the client exit at its next checkpoint without cleaning up.
func (w *worker) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
}

// checkpoint is where a pause takes effect: between deciding and acting.
// It reports false once the client is dead.
func (w *worker) checkpoint() bool {
	w.mu.Lock()
	until, dead := w.pausedUntil, w.dead
	w.mu.Unlock()
	if dead {
		return false
	}
	if now := w.rec.Elapsed(); until > now {
		time.Sleep(until - now)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.dead
}

func (w *worker) value() string {
	w.writes++
	return fmt.Sprintf("%s#%d", w.name, w.writes)
}

// believes is the naive client's idea of whether it holds the lock.
func (w *worker) believes() bool {
	if !w.holding {
		return false
	}
	if ttl := w.group.Config.TTL; ttl > 0 {
		return w.clock.Now().Before(w.lastRenew.Add(ttl))
	}
	return true
}

func (w *worker) lostSession() {
	w.session, w.holding = "", false
}

// run is the client's main loop until stopAt; then a live client cleans up.
func (w *worker) run() {
	for w.rec.Elapsed() < w.stopAt {
		if !w.checkpoint() {
			w.markCrashed()
			return
		}
		w.step()
		w.clock.sleep(w.plan.Think())
	}
	if !w.checkpoint() {
		w.markCrashed()
		return
	}
	w.cleanup()
}

func (w *worker) markCrashed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crashed = true
}

func (w *worker) isCrashed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crashed
}

func (w *worker) step() {
	if w.session == "" {
		w.behavior = w.plan.Behavior()
		cs := w.group.Config.Create(w.node, w.name, w.behavior)
		r := w.api.create(cs)
		if r.Outcome == OutOK {
			w.session, w.lastRenew = r.SessionID, w.clock.Now()
		}
		return
	}
	w.maybeRenew()
	if w.session == "" {
		return
	}
	switch w.plan.Next(w.believes()) {
	case stepKV:
		w.kvStep()
	case stepWork:
		if !w.holding {
			w.acquire()
		}
		if w.holding {
			w.work()
		}
	case stepRelease:
		r := w.api.kv(model.KVOp{Verb: model.KVUnlock, Key: w.group.Key, Session: w.session, Value: []byte(w.value())})
		if r.Outcome == OutOK || r.Outcome == OutFail {
			w.holding = false
		}
	case stepDestroy:
		r := w.api.destroy(w.session)
		if r.Outcome == OutOK || r.Outcome == OutFail {
			w.lostSession()
		}
	case stepIdle:
	}
}

func (w *worker) maybeRenew() {
	ttl := w.group.Config.TTL
	if ttl == 0 || w.clock.Now().Before(w.lastRenew.Add(ttl/2)) {
		return
	}
	before := w.clock.Now()
	r := w.api.renew(w.session)
	switch {
	case r.Outcome == OutOK && r.Found:
		w.lastRenew = before
	case r.Outcome == OutOK:
		w.lostSession() // 404: the session is gone (S20)
	}
}

func (w *worker) acquire() {
	if w.plan.UseTxnLock() {
		r := w.api.txn([]model.KVOp{{Verb: model.KVLock, Key: w.group.Key, Session: w.session, Value: []byte(w.value())}})
		switch {
		case r.Outcome == OutOK && r.OK && len(r.Entries) == 1:
			w.holding, w.seq = true, r.Entries[0].Sequencer()
		case r.Outcome == OutOK && !r.LockDelay && len(r.TxnErrors) > 0 && isInvalidSession(r.TxnErrors[0].What):
			w.lostSession()
		default:
			w.clock.sleep(w.plan.RetryAfter())
		}
		return
	}
	r := w.api.kv(model.KVOp{Verb: model.KVLock, Key: w.group.Key, Session: w.session, Value: []byte(w.value())})
	switch {
	case r.Outcome == OutOK && r.OK:
		// ?acquire answers only true: read the key to learn the sequencer.
		g := w.api.get(w.group.Key)
		if g.Outcome == OutOK && g.Found && g.Entries[0].Session == w.session {
			w.holding, w.seq = true, g.Entries[0].Sequencer()
		}
	case r.Outcome == OutFail && isInvalidSession(r.Err):
		w.lostSession()
	default:
		w.clock.sleep(w.plan.RetryAfter())
	}
}

func isInvalidSession(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "invalid session")
}

// work is check-then-act: the client checks its belief, then (possibly
// after a pause) writes to both resources.
func (w *worker) work() {
	if !w.believes() {
		w.holding = false // the naive client thinks its TTL ran out
		return
	}
	if !w.checkpoint() {
		return
	}
	v := w.value()
	w.writeRes(ResUnfenced, "", v)
	mode := FenceToken
	if w.plan.FenceByTxn() {
		mode = FenceTxn
	}
	if status := w.writeRes(ResFenced, mode, v); status == http.StatusConflict {
		w.holding = false // the fence says we are stale
	}
}

// resWriteWait is how long a client waits for a resource's answer. It is
// long enough for a write on a slow link (2×latency to connect and send) to
// arrive, late, as a delayed packet would.
const resWriteWait = 30 * time.Second

func (w *worker) writeRes(res, mode, value string) int {
	q := url.Values{}
	q.Set("res", res)
	q.Set("mode", mode)
	q.Set("client", w.name)
	q.Set("key", w.seq.Key)
	q.Set("session", w.seq.Session)
	q.Set("index", strconv.FormatUint(w.seq.LockIndex, 10))
	q.Set("value", value)
	ctx, cancel := context.WithTimeout(context.Background(), resWriteWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+resAddr+"/write?"+q.Encode(), nil)
	if err != nil {
		return 0
	}
	resp, err := w.res.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (w *worker) kvStep() {
	verb, key := w.plan.KVOp("")
	switch verb {
	case model.KVGet:
		if r := w.api.get(key); r.Outcome == OutOK {
			w.modIdx[key] = 0
			if r.Found {
				w.modIdx[key] = r.Entries[0].ModifyIndex
			}
		}
	case model.KVCAS:
		w.api.kv(model.KVOp{Verb: model.KVCAS, Key: key, Index: w.modIdx[key], Value: []byte(w.value())})
	case model.KVDelete:
		w.api.kv(model.KVOp{Verb: model.KVDelete, Key: key})
	default:
		w.api.kv(model.KVOp{Verb: model.KVSet, Key: key, Value: []byte(w.value())})
	}
}

// cleanup releases the lock and destroys the session, retrying unknown
// outcomes, so that only crashed clients leave locks behind.
func (w *worker) cleanup() {
	for try := 0; w.session != "" && try < 10; try++ {
		r := w.api.destroy(w.session)
		if r.Outcome == OutOK || r.Outcome == OutFail {
			w.lostSession()
			return
		}
		time.Sleep(time.Second)
	}
}
