package recipes

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/recipe"
	"github.com/tenurekv/tenure/sim/simnet"
)

// Recipes the recipe runner can drive (package recipe, SPEC S49-S51).
const (
	RecipeElection  = "election"
	RecipeSemaphore = "semaphore"
)

// recipeService is the elected service; its leader key is recipe.ElectionKey.
const RecipeService = "sim"

// recipeStateKey is the KV key every leader writes with recipe.Fence: a
// resource kept in the store itself, guarded by check-sequencer (S43).
const RecipeStateKey = "service/" + RecipeService + "/state"

// recipeSemPrefix is the semaphore's prefix.
const RecipeSemPrefix = "sem/sim"

// RecipeConfig is one recipe run under faults. The same RecipeConfig always
// yields the same fault schedule and the same process plans.
type RecipeConfig struct {
	Seed    uint64
	Servers int    // 3 or 5
	Recipe  string // RecipeElection or RecipeSemaphore
	// Contenders is how many processes take part, each on its own client
	// host and talking to its own client agent.
	Contenders int
	// Limit is the semaphore's limit (RecipeSemaphore only).
	Limit int
	// TTL and LockDelay are every recipe session's (checks: none, so the
	// TTL alone detects a dead process).
	TTL, LockDelay time.Duration
	// Duration is the virtual length of the workload-and-faults phase.
	// A settle phase follows, long enough for the last takeover.
	Duration time.Duration
	// Faults are the kinds the seeded schedule draws from.
	Faults []core.FaultKind
	// Schedule, if set, replaces the seeded schedule (named scenarios).
	Schedule []core.Fault
	// NoResign keeps holders from releasing after their seeded share of
	// work, so that only faults move the lock (named scenarios).
	NoResign bool
}

// defaultRecipeConfig is a seeded election or semaphore run with every
// recipe fault kind.
func DefaultRecipeConfig(seed uint64, kind string) RecipeConfig {
	c := RecipeConfig{Seed: seed, Servers: 3, Recipe: kind, Contenders: 3, TTL: 10 * time.Second,
		LockDelay: 3 * time.Second, Duration: 90 * time.Second, Faults: RecipeFaultKinds}
	if kind == RecipeSemaphore {
		c.Contenders, c.Limit = 5, 2
	}
	return c
}

func (c RecipeConfig) validate() error {
	switch {
	case c.Recipe != RecipeElection && c.Recipe != RecipeSemaphore:
		return fmt.Errorf("sim: unknown recipe %q", c.Recipe)
	case c.Servers < 1 || c.Contenders < 2 || c.Duration <= 0:
		return fmt.Errorf("sim: bad recipe config: %d servers, %d contenders, duration %v", c.Servers, c.Contenders, c.Duration)
	case c.TTL < model.MinSessionTTL:
		return fmt.Errorf("sim: recipe TTL %v below the server's minimum %v", c.TTL, model.MinSessionTTL)
	case c.LockDelay < 0:
		return fmt.Errorf("sim: negative lock-delay %v", c.LockDelay)
	case c.Recipe == RecipeSemaphore && (c.Limit < 1 || c.Limit >= c.Contenders):
		return fmt.Errorf("sim: semaphore limit %d must be in [1, %d)", c.Limit, c.Contenders)
	}
	return nil
}

// HoldRecord is one holding period as its process saw it: from the
// recipe's Campaign/Acquire returning to Lost closing or Release.
type HoldRecord struct {
	Client   string          `json:"client"`
	Seq      model.Sequencer `json:"seq"`
	Acquired time.Duration   `json:"acquired"`
	// Lost is when the process noticed Lost closed (-1: it never did);
	// Ended is when it stopped acting as holder (released or stepped down).
	Lost  time.Duration `json:"lost"`
	Ended time.Duration `json:"ended"`
	Why   string        `json:"why,omitempty"`
}

// Death is a holder-directed fault: the process holding at At stopped
// being able to act (pause, partition, crash) until End (-1: never).
type Death struct {
	Fault  int             `json:"fault"`
	Kind   core.FaultKind  `json:"kind"`
	At     time.Duration   `json:"at"`
	End    time.Duration   `json:"end"`
	Client string          `json:"client"`
	Seq    model.Sequencer `json:"seq"`
}

// SemWrite is one request to a semaphore resource.
type SemWrite struct {
	Resource  string          `json:"resource"` // SemVerified or SemUnverified
	Client    string          `json:"client"`
	Seq       model.Sequencer `json:"seq"` // the contender key's
	At        time.Duration   `json:"at"`
	CheckCall time.Duration   `json:"check_call"`
	Accepted  bool            `json:"accepted"`
	Reason    string          `json:"reason,omitempty"`
	// Holders is .lock's Holders as the verifying read saw it.
	Holders []string `json:"holders,omitempty"`
}

// FenceKV is one recipe.Fence write of recipeStateKey, as the leader saw it.
type FenceKV struct {
	Client  string          `json:"client"`
	Seq     model.Sequencer `json:"seq"`
	At      time.Duration   `json:"at"`
	Outcome string          `json:"outcome"` // "ok", "stale" or "error"
	Err     string          `json:"err,omitempty"`
}

// RecipeResult is what a recipe run produced. Events is the sim trace
// (servers' applied states, resource writes, faults); the rest is the
// processes' own log.
type RecipeResult struct {
	Config    RecipeConfig
	Header    core.RunHeader
	Bounds    RecipeBounds
	Events    []core.Event
	Holds     []HoldRecord
	Deaths    []Death
	SemWrites []SemWrite
	FenceKVs  []FenceKV
	// Start is when the processes started (fault times count from it);
	// Teardown is when they were told to stop.
	Start, Teardown time.Duration
	Virtual         time.Duration
}

// recipeLog collects the processes' records (safe for concurrent use).
type recipeLog struct {
	rec       *core.Recorder
	mu        sync.Mutex
	holds     []HoldRecord
	deaths    []Death
	semWrites []SemWrite
	fenceKVs  []FenceKV
}

// acquired records a new hold and returns its slot in the log.
func (l *recipeLog) acquired(client string, seq model.Sequencer) int {
	l.rec.Add(core.Event{Kind: core.KindNote, Node: client, Msg: fmt.Sprintf("recipe: %s holds %s@%d/%s", client, seq.Key, seq.LockIndex, seq.Session)})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holds = append(l.holds, HoldRecord{Client: client, Seq: seq, Acquired: l.rec.Elapsed(), Lost: -1, Ended: -1})
	return len(l.holds) - 1
}

func (l *recipeLog) lost(i int, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds[i].Lost < 0 {
		l.holds[i].Lost, l.holds[i].Why = l.rec.Elapsed(), why
	}
}

func (l *recipeLog) ended(i int, why string) {
	h := l.hold(i)
	l.rec.Add(core.Event{Kind: core.KindNote, Node: h.Client, Msg: fmt.Sprintf("recipe: %s stops holding %s@%d: %s", h.Client, h.Seq.Key, h.Seq.LockIndex, why)})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds[i].Ended < 0 {
		l.holds[i].Ended = l.rec.Elapsed()
	}
	if l.holds[i].Why == "" {
		l.holds[i].Why = why
	}
}

func (l *recipeLog) hold(i int) HoldRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds[i]
}

func (l *recipeLog) death(d Death) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deaths = append(l.deaths, d)
}

func (l *recipeLog) deathEnded(fault int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.deaths {
		if l.deaths[i].Fault == fault {
			l.deaths[i].End = l.rec.Elapsed()
		}
	}
}

func (l *recipeLog) semWrite(w SemWrite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.semWrites = append(l.semWrites, w)
}

func (l *recipeLog) fenceKV(f FenceKV) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fenceKVs = append(l.fenceKVs, f)
}

// planRecipeRun draws what the seed decides before the run starts. With
// holder-clock-rate among the fault kinds, servers' clocks are also off by up to
// ±5 s and drift up to ±5 %, and clients' clocks are off by up to ±5 s.
func planRecipeRun(cfg RecipeConfig) (core.RunHeader, RecipeBounds) {
	hdr := core.RunHeader{Seed: cfg.Seed, Clocks: map[string]core.ClockSkew{}, Groups: map[string]core.GroupInfo{}}
	skew := slices.Contains(cfg.Faults, core.FaultHolderClockRate)
	r := core.Stream(cfg.Seed, "recipe-clocks")
	minRate := core.PlanServerClocks(&hdr, cfg.Servers, skew, r)
	key := recipe.ElectionKey(RecipeService)
	if cfg.Recipe == RecipeSemaphore {
		key = RecipeSemPrefix
	}
	hdr.Groups[cfg.Recipe] = core.GroupInfo{Config: core.SessionConfig{Checks: core.ChecksTTL, TTL: cfg.TTL, LockDelay: cfg.LockDelay}, Key: key}
	for i := range cfg.Contenders {
		name := fmt.Sprintf("%s-%d", cfg.Recipe, i+1)
		// Each process runs on its own host with its own client agent.
		agent := core.AgentName(i)
		hdr.Agents = append(hdr.Agents, agent)
		hdr.Clients = append(hdr.Clients, core.ClientInfo{Name: name, Group: cfg.Recipe, Agent: agent})
		ck := core.ClockSkew{Rate: 1}
		if skew {
			ck.Offset = core.Between(r, -5*time.Second, 5*time.Second)
		}
		hdr.Clocks[name] = ck
	}
	hdr.Faults = cfg.Schedule
	if hdr.Faults == nil {
		hdr.Faults = core.NewSchedule(cfg.Seed, RecipeSchedule(cfg.Contenders), cfg.Faults, 5*time.Second, cfg.Duration)
	}
	b := DeriveRecipeBounds(cfg.TTL, cfg.LockDelay, minRate)
	return hdr, b
}

// runRecipe runs one recipe under faults. Like Run it must be called inside
// a testing/synctest bubble and shuts everything down before returning; it
// fails only if the run could not be carried out. Properties are checked
// afterwards (CheckRecipeRun).
func RunRecipe(cfg RecipeConfig) (*RecipeResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hdr, bounds := planRecipeRun(cfg)
	// Gossip runs, for the client agents the processes talk to; recipe
	// sessions bind no checks (TTL only), so what gossip decides about a
	// node plays no part in what a recipe run checks.
	base, err := core.Start(hdr, nil, false, true)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	rec, network, cl, t0 := base.Rec, base.Net, base.Cl, base.T0
	log := &recipeLog{rec: rec}

	stopRes, err := startRecipeResources(cfg, rec, log, network, hdr.Servers)
	if err != nil {
		return nil, err
	}
	defer stopRes()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	procs := make([]*recipeProc, 0, len(hdr.Clients))
	for _, ci := range hdr.Clients {
		p, err := newRecipeProc(cfg, ci, hdr.Clocks[ci.Name], network, rec, log)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Run(ctx) }()
	}
	inj := &core.Injector{Cl: cl, Net: network, Rec: rec, Clients: procFaults{cl: cl, log: log, procs: procs}, T0: t0}
	var fwg sync.WaitGroup
	for _, f := range hdr.Faults {
		fwg.Add(1)
		go func() { defer fwg.Done(); inj.Run(f) }()
	}
	fwg.Wait()
	// Settle: faults are over; give the last takeover its full bound.
	if d := t0 + cfg.Duration + bounds.Settle() - rec.Elapsed(); d > 0 {
		time.Sleep(d)
	}
	teardown := rec.Elapsed()
	rec.Add(core.Event{Kind: core.KindNote, Msg: "recipe: teardown"})
	cancel()
	for _, p := range procs {
		p.thaw()
	}
	wg.Wait()
	if err := cl.Shutdown(); err != nil {
		return nil, fmt.Errorf("sim: shutdown: %w", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	return &RecipeResult{Config: cfg, Header: hdr, Bounds: bounds, Events: rec.Events(),
		Holds: log.holds, Deaths: log.deaths, SemWrites: log.semWrites, FenceKVs: log.fenceKVs,
		Start: t0, Teardown: teardown, Virtual: rec.Elapsed()}, nil
}

// startRecipeResources serves the election's resources (the sim's
// Resources: fenced and unfenced) and the semaphore's (verified and
// unverified) on the resource node.
func startRecipeResources(cfg RecipeConfig, rec *core.Recorder, log *recipeLog, network *simnet.Network, servers []string) (func(), error) {
	reader := &clusterReader{hc: &http.Client{Transport: core.SimTransport(network, core.ResNode)}, servers: servers}
	var handler http.Handler
	addr := core.ResAddr
	switch cfg.Recipe {
	case RecipeElection:
		// Resources holds a sync.Mutex across its network check; one
		// request at a time keeps any goroutine from waiting on it.
		res := core.NewResources(rec, reader.checkSequencer)
		handler = serialised(newChanLock(), res.Handler(10*time.Second))
	default:
		addr = semResAddr
		handler = (&semResource{rec: rec, log: log, reader: reader, limit: cfg.Limit,
			verifiedMu: newChanLock(), unverifiedMu: newChanLock()}).handler()
	}
	ln, err := network.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("sim: resource listener: %w", err)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
