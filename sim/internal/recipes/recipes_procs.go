package recipes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/recipe"
	"github.com/tenurekv/tenure/sim/simnet"
)

// semResAddr is the semaphore resources' address on the resource node.
const semResAddr = core.ResNode + ":9001"

// resWriteTimeout bounds one resource write; long, so that a write held on a
// slow link still arrives (late) instead of being abandoned.
const resWriteTimeout = time.Minute

// recipeProc is one client process running a recipe from package recipe,
// unmodified, on its own host: its HTTP goes over the simulated network to
// its agent, and its Clock is the host's clock, gated while the process is
// frozen (paused or crashed).
type recipeProc struct {
	name  string // also its network node
	agent string // its client agent's node
	cfg   RecipeConfig
	rec   *core.Recorder
	log   *recipeLog
	clock *core.ClientClock
	c     *recipe.Client
	res   *http.Client
	plan  *rand.Rand

	mu      sync.Mutex
	frozen  chan struct{} // non-nil while frozen; closed by thaw
	parked  chan struct{} // set by freezeAtCheckpoint; the next checkpoint freezes and closes it
	crashed bool
	holding int // index of the current hold in log.holds, -1 if none
	seq     model.Sequencer
	writes  int
}

func newRecipeProc(cfg RecipeConfig, ci core.ClientInfo, sk core.ClockSkew, network *simnet.Network, rec *core.Recorder, log *recipeLog) (*recipeProc, error) {
	p := &recipeProc{name: ci.Name, agent: ci.Agent, cfg: cfg, rec: rec, log: log, clock: core.NewClientClock(sk.Offset, sk.Rate),
		res: &http.Client{Transport: core.SimTransport(network, ci.Name)}, plan: core.Stream(cfg.Seed, "recipe/"+ci.Name), holding: -1}
	c, err := recipe.NewClient(&api.Config{Address: ci.Agent + ":" + core.HttpPort, Scheme: "http",
		HttpClient: &http.Client{Transport: core.SimTransport(network, ci.Name)}})
	if err != nil {
		return nil, fmt.Errorf("sim: recipe client %s: %w", ci.Name, err)
	}
	c.Clock = gatedClock{p: p}
	p.c = c
	return p, nil
}

// gatedClock adapts the host's clientClock to recipe.Clock. A timer that
// comes due while the process is frozen fires only when it thaws, as a
// stopped process runs no code. A rate change (holder-clock-rate fault) applies to
// timers armed after it.
type gatedClock struct{ p *recipeProc }

func (g gatedClock) Now() time.Time { return g.p.clock.Now() }

func (g gatedClock) AfterFunc(d time.Duration, f func()) func() bool {
	cc := g.p.clock
	cc.Mu.Lock()
	r := cc.Rate
	cc.Mu.Unlock()
	// Round up, so that no timer fires before d has passed on the host.
	t := time.AfterFunc(time.Duration(math.Ceil(float64(max(d, 0))/r)), func() {
		g.p.waitThawed()
		f()
	})
	return t.Stop
}

func (p *recipeProc) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
}

func (p *recipeProc) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}

// freezeAtCheckpoint asks the process to freeze when its loop next
// reaches a checkpoint (until then it runs on, renewals included) and
// waits, up to limit, until it has; false if it did not in time (it may be
// blocked in a campaign or a write), and the caller freezes it as it is.
func (p *recipeProc) freezeAtCheckpoint(limit time.Duration) bool {
	parked := make(chan struct{})
	p.mu.Lock()
	p.parked = parked
	p.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-parked:
		return true
	case <-t.C:
		// Withdraw the request, unless a checkpoint took it meanwhile.
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.parked == parked {
			p.parked = nil
			return false
		}
		return true
	}
}

// crash freezes the process for good: it never acts again (at teardown it
// is thawed only to let its goroutines end).
func (p *recipeProc) Crash() {
	p.mu.Lock()
	p.crashed = true
	p.mu.Unlock()
	p.freeze()
}

func (p *recipeProc) isCrashed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crashed
}

func (p *recipeProc) waitThawed() {
	p.mu.Lock()
	ch := p.frozen
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// checkpoint is where a freeze takes effect in the application's own code:
// between deciding (Lost is still open) and acting (writing). It reports
// whether the process may go on.
func (p *recipeProc) checkpoint(ctx context.Context) bool {
	p.mu.Lock()
	if p.parked != nil {
		if p.frozen == nil {
			p.frozen = make(chan struct{})
		}
		close(p.parked)
		p.parked = nil
	}
	p.mu.Unlock()
	p.waitThawed()
	return ctx.Err() == nil && !p.isCrashed()
}

// current is the hold the process believes in, if any.
func (p *recipeProc) Current() (model.Sequencer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq, p.holding >= 0
}

// holdIndex is the current hold's slot in the log, -1 if none.
func (p *recipeProc) holdIndex() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holding
}

func (p *recipeProc) setHolding(i int, seq model.Sequencer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding, p.seq = i, seq
}

func (p *recipeProc) note(msg string) {
	p.rec.Add(core.Event{Kind: core.KindNote, Node: p.name, Msg: "recipe: " + p.name + " " + msg})
}

func (p *recipeProc) sessionOpts() recipe.SessionOptions {
	ld := p.cfg.LockDelay
	if ld == 0 {
		ld = recipe.NoLockDelay
	}
	return recipe.SessionOptions{Name: p.name, TTL: p.cfg.TTL, LockDelay: ld, Checks: []string{}}
}

// rest waits a seeded while on bubble time, so a frozen process still
// reaches its next checkpoint (where the freeze holds it).
func (p *recipeProc) rest(ctx context.Context, lo, hi time.Duration) {
	t := time.NewTimer(core.Between(p.plan, lo, hi))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (p *recipeProc) Run(ctx context.Context) {
	switch p.cfg.Recipe {
	case RecipeElection:
		p.runElection(ctx)
	default:
		p.runSemaphore(ctx)
	}
}

// recipeWait bounds the recipes' blocking queries (the default is a minute;
// shorter keeps the traces readable and changes nothing else).
const recipeWait = 10 * time.Second

func (p *recipeProc) runElection(ctx context.Context) {
	e, err := p.c.Election(RecipeService, recipe.LockOptions{Value: []byte(p.name), Session: p.sessionOpts(), WaitTime: recipeWait})
	if err != nil {
		p.note("cannot prepare the election: " + err.Error())
		return
	}
	for p.checkpoint(ctx) {
		h, err := e.Campaign(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.note("campaign: " + err.Error())
				p.rest(ctx, time.Second, time.Second)
			}
			continue
		}
		p.hold(ctx, h, p.leaderWrite)
		p.rest(ctx, 500*time.Millisecond, 2*time.Second)
	}
}

func (p *recipeProc) runSemaphore(ctx context.Context) {
	s, err := p.c.Semaphore(recipe.SemaphoreOptions{Prefix: RecipeSemPrefix, Limit: p.cfg.Limit, Value: []byte(p.name), Session: p.sessionOpts(), WaitTime: recipeWait})
	if err != nil {
		p.note("cannot prepare the semaphore: " + err.Error())
		return
	}
	for p.checkpoint(ctx) {
		slot, err := s.Acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.note("acquire: " + err.Error())
				p.rest(ctx, time.Second, time.Second)
			}
			continue
		}
		p.hold(ctx, slot.Hold, p.slotWrite)
		p.rest(ctx, 500*time.Millisecond, 3*time.Second)
	}
}

// hold is the holder's work loop, check-then-act like any real client: while
// Lost is open it writes (write reports a refusal as stale), until it has done
// its seeded share of work, and then releases. Losing ends it; a fenced
// refusal makes it step down.
func (p *recipeProc) hold(ctx context.Context, h *recipe.Hold, write func(context.Context, model.Sequencer) bool) {
	s := h.Sequencer()
	seq := model.Sequencer{Key: s.Key, LockIndex: s.LockIndex, Session: s.Session}
	i := p.log.acquired(p.name, seq)
	p.setHolding(i, seq)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		// When the recipe signalled, not when the loop next looks.
		defer close(watched)
		select {
		case <-h.Lost():
			if err := h.Err(); !errors.Is(err, recipe.ErrReleased) {
				p.log.lost(i, err.Error())
			}
		case <-done:
		}
	}()
	share := 3 + p.plan.IntN(15)
	why := ""
	for n := 0; why == ""; n++ {
		select {
		case <-h.Lost():
			why = fmt.Sprintf("lost: %v", h.Err())
			continue
		default:
		}
		switch {
		case !p.checkpoint(ctx):
			why = "stopped"
		case write(ctx, seq):
			why = "write refused as stale: stepping down"
		case n >= share && !p.cfg.NoResign:
			why = "done: releasing"
		default:
			p.rest(ctx, 300*time.Millisecond, time.Second)
		}
	}
	p.setHolding(-1, model.Sequencer{})
	p.log.ended(i, why)
	p.waitThawed()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	if err := h.Release(rctx); err != nil && !p.isCrashed() {
		p.note("release: " + err.Error())
	}
	cancel()
	close(done)
	<-watched
}

// fenceValue is what a leader writes to recipeStateKey with recipe.Fence;
// the fence-kv check reads the writer's sequencer back from it.
type FenceValue struct {
	Client string          `json:"client"`
	Seq    model.Sequencer `json:"seq"`
	N      int             `json:"n"`
}

// leaderWrite writes the unfenced resource, the fenced one (which checks the
// sequencer with check-sequencer, S43) and, through recipe.Fence, the
// state key in the store. It reports whether a fence refused the sequencer.
func (p *recipeProc) leaderWrite(ctx context.Context, seq model.Sequencer) bool {
	p.writes++
	v := fmt.Sprintf("%s#%d", p.name, p.writes)
	p.post(ctx, core.ResAddr, "/write", url.Values{"res": {core.ResUnfenced}}, seq, v)
	stale := p.post(ctx, core.ResAddr, "/write", url.Values{"res": {core.ResFenced}, "mode": {core.FenceTxn}}, seq, v) == http.StatusConflict

	val, err := json.Marshal(FenceValue{Client: p.name, Seq: seq, N: p.writes})
	if err != nil {
		p.note("encode fenced value: " + err.Error())
		return stale
	}
	fctx, cancel := context.WithTimeout(ctx, resWriteTimeout)
	defer cancel()
	_, err = p.c.Fence(fctx, recipe.Sequencer{Key: seq.Key, LockIndex: seq.LockIndex, Session: seq.Session},
		api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: RecipeStateKey, Value: val}}})
	f := FenceKV{Client: p.name, Seq: seq, At: p.rec.Elapsed(), Outcome: "ok"}
	switch {
	case errors.Is(err, recipe.ErrStaleSequencer):
		f.Outcome, f.Err, stale = "stale", err.Error(), true
	case err != nil:
		f.Outcome, f.Err = "error", err.Error()
	}
	p.log.fenceKV(f)
	return stale
}

// slotWrite writes the verified semaphore resource (which checks the
// contender sequencer and admission at one index, S51) and the unverified one.
func (p *recipeProc) slotWrite(ctx context.Context, seq model.Sequencer) bool {
	p.writes++
	v := fmt.Sprintf("%s#%d", p.name, p.writes)
	p.post(ctx, semResAddr, "/sem", url.Values{"verify": {"0"}}, seq, v)
	return p.post(ctx, semResAddr, "/sem", url.Values{"verify": {"1"}}, seq, v) == http.StatusConflict
}

// post sends one resource write and returns its status (0: no answer).
func (p *recipeProc) post(ctx context.Context, addr, path string, q url.Values, seq model.Sequencer, value string) int {
	q.Set("client", p.name)
	q.Set("key", seq.Key)
	q.Set("session", seq.Session)
	q.Set("index", strconv.FormatUint(seq.LockIndex, 10))
	q.Set("value", value)
	wctx, cancel := context.WithTimeout(ctx, resWriteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(wctx, http.MethodPost, "http://"+addr+path+"?"+q.Encode(), nil)
	if err != nil {
		return 0
	}
	resp, err := p.res.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
