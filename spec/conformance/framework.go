package conformance

import (
	"context"
	"fmt"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
)

// Case is one check of one clause. Its status (and so the profiles that run
// it) is the clause's status in clauses.
type Case struct {
	clause string // clause ID, e.g. "S27"
	name   string // short slug, e.g. "acquire-unlocked-bumps-lockindex"
	// slow marks cases that must wait out real timers (TTL, lock-delay cap);
	// they are started first so they overlap the rest of the suite.
	slow bool
	// unobservable, when set, says why the clause cannot be checked by a
	// client over HTTP; the case then always reports SKIP with that reason.
	unobservable string
	// Agents marks cases that start gossip members of their own
	// (caseT.StartAgent) from Options.Agent; without one they report SKIP.
	agents bool
	// acl marks cases that need ACLs on and a management token: only the
	// ACL profiles run them, and those run nothing else (cases_acl.go).
	acl bool
	run func(t *caseT)
}

// ID is the case's name as used in reports and by the filter.
func (c Case) ID() string { return c.clause + "/" + c.name }

// Status is the status of the case's clause ("" if the clause is unknown).
func (c Case) status() Status {
	cl, _ := clauseByID(c.clause)
	return cl.Status
}

// Options configure a run.
type Options struct {
	Addr     string // base URL of the server, e.g. http://127.0.0.1:8500
	Token    string // ACL token sent as X-Consul-Token; empty sends none
	Profile  Status // contract (default), consul or tenure
	Parallel int    // cases run at once; 0 means 12
	JSON     bool   // Main: print JSON instead of the table
	Filter   string // regexp over case IDs ("S27/acquire-..."); empty runs all
	SkipSlow bool   // report slow cases as SKIP instead of running them
	// cases replaces the built-in suite (framework tests use this).
	cases []Case
	// Timeout bounds each case (slow cases get three times as much);
	// 0 means a minute.
	Timeout time.Duration
	// ReapWait is how long the server takes to reap a deletion (its reap
	// window plus one interval). 0 skips the cases that need a reap (S52):
	// a black-box suite cannot learn the window, and Consul's is 15 minutes.
	ReapWait time.Duration
	// Agent is an agent binary that takes Consul's agent flags and is of the
	// server's own kind (consul for a Consul server, tenure for tenure). The
	// cases that need gossip members of their own start client agents from
	// it and join them to the server's pool; without it they are skipped.
	Agent string
}

// Defaults for Options.
const (
	defaultParallel    = 12
	defaultCaseTimeout = 60 * time.Second
)

// Run executes the cases selected by opts against opts.Addr and reports
// every selected case: PASS, FAIL, or SKIP with the reason.
func Run(ctx context.Context, opts Options) Report {
	start := time.Now()
	rep := Report{Addr: opts.Addr, Profile: opts.Profile, Started: start}
	if rep.Profile == "" {
		rep.Profile = Contract
	}
	finish := func() Report {
		rep.Duration = time.Since(start)
		rep.Seconds = rep.Duration.Seconds()
		rep.Clauses = summarize(rep.Cases)
		rep.count()
		return rep
	}
	if _, err := parseStatus(string(rep.Profile)); err != nil {
		rep.Error = err.Error()
		return finish()
	}
	filter, err := regexp.Compile(opts.Filter)
	if err != nil {
		rep.Error = fmt.Sprintf("bad filter %q: %v", opts.Filter, err)
		return finish()
	}
	cases := opts.cases
	if cases == nil {
		cases = Suite()
	}
	var selected []Case
	for _, c := range cases {
		if filter.MatchString(c.ID()) {
			selected = append(selected, c)
		}
	}

	// Work out which cases actually need the server before touching it, so a
	// run whose cases are all skipped works with no server at all.
	results := make([]CaseResult, len(selected))
	var torun []int
	for i, c := range selected {
		results[i] = CaseResult{ID: c.ID(), Clause: c.clause, Name: c.name, Status: c.status()}
		if reason := skipReason(c, rep.Profile, opts.SkipSlow, opts.Agent); reason != "" {
			results[i].Outcome, results[i].Reason = Skip, reason
			continue
		}
		torun = append(torun, i)
	}

	if len(torun) > 0 {
		e, err := newEnv(opts.Addr, opts.Token)
		if err == nil {
			e.reapWait = opts.ReapWait
			e.agentBin = opts.Agent
			err = e.preflight(ctx)
		}
		if err == nil && rep.Profile.acl() {
			err = e.preflightACL(ctx)
		}
		if err != nil {
			rep.Error = err.Error()
			for _, i := range torun {
				results[i].Outcome, results[i].Reason = Fail, "not run: "+err.Error()
			}
			rep.Cases = results
			return finish()
		}
		// slow cases first so their waiting overlaps everything else.
		sort.SliceStable(torun, func(a, b int) bool {
			return selected[torun[a]].slow && !selected[torun[b]].slow
		})
		par := opts.Parallel
		if par <= 0 {
			par = defaultParallel
		}
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = defaultCaseTimeout
		}
		sem := make(chan struct{}, par)
		var wg sync.WaitGroup
		for seq, i := range torun {
			c := selected[i]
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				d := timeout
				if c.slow {
					d *= 3
				}
				results[i] = runCase(ctx, e, c, seq, d, results[i])
			}()
		}
		wg.Wait()
	}
	rep.Cases = results
	return finish()
}

// skipReason says why c is not run under profile p, or "" if it runs.
// agent is Options.Agent.
func skipReason(c Case, p Status, skipSlow bool, agent string) string {
	st := c.status()
	switch {
	case st == "":
		return fmt.Sprintf("clause %s is not in the clause index", c.clause)
	case c.run == nil && c.unobservable == "":
		return "case has no body"
	case c.acl && !p.acl():
		return "needs a server with ACLs on and a management token: run profile acl with -token"
	case !c.acl && p.acl():
		return fmt.Sprintf("profile %s runs only the cases that need ACLs", p)
	case !p.covers(st):
		return fmt.Sprintf("clause %s is %s; profile %s runs %s", c.clause, st, p, profileScope(p))
	case c.unobservable != "":
		return "not observable over HTTP: " + c.unobservable
	case skipSlow && c.slow:
		return "slow case (waits on real TTL or lock-delay timers) skipped"
	case c.agents && agent == "":
		return "starts gossip members of its own: needs an agent binary of the server's kind (-agent)"
	}
	return ""
}

func profileScope(p Status) string {
	switch p {
	case Contract, ACL:
		return "contract clauses only"
	case ACLConsul:
		return "contract+consul clauses"
	case ACLTenure:
		return "contract+tenure clauses"
	}
	return "contract+" + string(p) + " clauses"
}

// failNow unwinds a case goroutine after a fatal check, like testing.T.FailNow.
type failNow struct{}

// runCase runs one case body with its own deadline, recovering panics and
// always running its cleanups.
func runCase(parent context.Context, e *env, c Case, seq int, timeout time.Duration, res CaseResult) CaseResult {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	t := newT(ctx, e, c, seq)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(failNow); !ok {
					t.fail(fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
				}
			}
		}()
		c.run(t)
	}()
	<-done
	t.runCleanups()
	res.Duration = time.Since(start)
	res.Seconds = res.Duration.Seconds()
	res.Log = t.logs
	switch {
	case t.failed:
		res.Outcome = Fail
		res.Reason = strings.Join(t.failures, "; ")
	case t.skipped != "":
		res.Outcome, res.Reason = Skip, t.skipped
	default:
		res.Outcome = Pass
	}
	return res
}

// caseT is a case's handle: its context, its server, its failures and cleanups.
// A case runs in one goroutine; Errorf/Fatalf may also be called from
// goroutines the case starts (Fatalf only from the case goroutine).
type caseT struct {
	ctx    context.Context
	env    *env
	c      Case
	prefix string // unique KV prefix for this case
	seq    int

	mu         sync.Mutex
	prefixUsed bool
	home       string
	failed     bool
	failures   []string
	skipped    string
	logs       []string
	cleanups   []func(ctx context.Context) error
}

func newT(ctx context.Context, e *env, c Case, seq int) *caseT {
	slug := strings.NewReplacer("/", "-", " ", "-").Replace(c.ID())
	return &caseT{
		ctx:    ctx,
		env:    e,
		c:      c,
		seq:    seq,
		prefix: fmt.Sprintf("conformance/%s/%s/", e.runID, slug),
	}
}

// Context is cancelled when the case times out or the run is cancelled.
func (t *caseT) Context() context.Context { return t.ctx }

func (t *caseT) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	t.failures = append(t.failures, msg)
}

// Errorf records a failure and lets the case continue.
func (t *caseT) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

// Fatalf records a failure and stops the case (cleanups still run).
func (t *caseT) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	panic(failNow{})
}

// Skipf stops the case and reports it as SKIP with the reason.
func (t *caseT) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skipped = fmt.Sprintf(format, args...)
	t.mu.Unlock()
	panic(failNow{})
}

// Logf keeps a note that is shown with the case's result.
func (t *caseT) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logs = append(t.logs, fmt.Sprintf(format, args...))
}

// Failed reports whether the case has failed so far.
func (t *caseT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Cleanup registers f to run after the case, last registered first. It gets
// a fresh context so cleanup still happens after a timeout.
func (t *caseT) Cleanup(f func(ctx context.Context) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *caseT) runCleanups() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		if err := t.cleanups[i](ctx); err != nil {
			// A failed cleanup leaves litter on the server but says nothing
			// about the clause, so it is logged rather than failed.
			t.Logf("cleanup: %v", err)
		}
	}
}

// Sleep waits d, stopping the case if its context ends first.
func (t *caseT) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-t.ctx.Done():
		t.Fatalf("case deadline reached while sleeping: %v", t.ctx.Err())
	}
}

// SleepUntil waits until the wall clock reaches at.
func (t *caseT) SleepUntil(at time.Time) { t.Sleep(time.Until(at)) }

// Go runs f in a new goroutine in which Fatalf is safe (it ends only that
// goroutine); the returned function waits for it.
func (t *caseT) Go(f func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(failNow); !ok {
					t.fail(fmt.Sprintf("panic in helper goroutine: %v\n%s", r, debug.Stack()))
				}
			}
		}()
		f()
	}()
	return func() { <-done }
}
