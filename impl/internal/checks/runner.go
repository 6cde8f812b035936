package checks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Notify receives each status a check decides on. Calls for one check are
// serialised and in order; calls for different checks may be concurrent. It
// must not call back into the Runner (Stop waits for a check's goroutine,
// which may be inside Notify).
type Notify func(id, status, output string)

// DefaultMaxChecks bounds the checks one agent runs when Options leaves it 0.
const DefaultMaxChecks = 1024

// Options configures a Runner.
type Options struct {
	// MaxChecks bounds the running checks (replacing one does not count).
	MaxChecks int
	// Stagger picks the wait before an interval check's first run; nil
	// means uniformly random in [0, interval), as Consul spreads its checks.
	Stagger func(interval time.Duration) time.Duration
	// DockerHost is the Docker Engine docker checks use (unix:///path or
	// tcp://host:port); empty means $DOCKER_HOST, else the engine's
	// default socket, as Consul finds it.
	DockerHost string
}

// Runner runs an agent's checks, each on its own goroutine (TTL checks on a
// timer), all time taken from the time package so tests can run it inside a
// testing/synctest bubble.
type Runner struct {
	opts   Options
	notify Notify

	// opMu serialises Start, Stop and Close, so a replacement finishes
	// stopping the old check before anyone sees the new one; mu guards the
	// map and is never held while a check stops.
	opMu   sync.Mutex
	mu     sync.Mutex
	checks map[string]*running
	closed bool
}

// NewRunner returns a Runner that reports through notify.
func NewRunner(opts Options, notify Notify) *Runner {
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = DefaultMaxChecks
	}
	if opts.Stagger == nil {
		opts.Stagger = func(iv time.Duration) time.Duration {
			if iv <= 0 {
				return 0
			}
			return rand.N(iv)
		}
	}
	opts.DockerHost = dockerHost(opts.DockerHost)
	return &Runner{opts: opts, notify: notify, checks: map[string]*running{}}
}

type running struct {
	def    Definition
	cancel context.CancelFunc
	done   chan struct{} // closed when the probe goroutine has returned
	ttl    *ttlCheck     // set for TTL checks, which have no goroutine
}

func (c *running) stop() {
	if c.ttl != nil {
		c.ttl.stop()
		return
	}
	c.cancel()
	<-c.done
}

// Start runs a prepared definition, replacing (and first stopping) a check
// with the same ID. A TTL check begins its TTL now.
func (r *Runner) Start(d Definition) error {
	var p prober
	if d.Kind() != kindTTL {
		var err error
		if p, err = newProber(d, r.opts.DockerHost); err != nil {
			return fmt.Errorf("start check %q: %w", d.ID, err)
		}
	}
	return r.start(d, p)
}

func (r *Runner) start(d Definition, p prober) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("start check %q: runner closed", d.ID)
	}
	old := r.checks[d.ID]
	if old == nil && len(r.checks) >= r.opts.MaxChecks {
		r.mu.Unlock()
		return &Error{http.StatusInternalServerError,
			fmt.Sprintf("Too many checks on this agent (limit %d)", r.opts.MaxChecks)}
	}
	delete(r.checks, d.ID)
	r.mu.Unlock()
	if old != nil {
		old.stop()
	}

	c := &running{def: d}
	id := d.ID
	notify := func(status, output string) { r.notify(id, status, output) }
	if d.Kind() == kindTTL {
		c.ttl = newTTLCheck(d, notify)
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel, c.done = cancel, make(chan struct{})
		go probeLoop(ctx, c.done, d, p, r.opts.Stagger(d.Interval), notify)
	}
	r.mu.Lock()
	r.checks[id] = c
	r.mu.Unlock()
	return nil
}

// Stop stops a check; once it returns the check reports nothing more. It
// reports whether the check was running.
func (r *Runner) Stop(id string) bool {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	c := r.checks[id]
	delete(r.checks, id)
	r.mu.Unlock()
	if c == nil {
		return false
	}
	c.stop()
	return true
}

// Running lists the IDs of the running checks (any order).
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.checks))
	for id := range r.checks {
		ids = append(ids, id)
	}
	return ids
}

// UpdateTTL sets a TTL check's status and output and restarts its TTL, as
// pass/warn/fail/update do. It returns the output as stored (capped). A
// check that is not a running TTL check is an error worded as Consul's 500.
func (r *Runner) UpdateTTL(id, status, output string) (string, error) {
	r.mu.Lock()
	c := r.checks[id]
	r.mu.Unlock()
	if c == nil || c.ttl == nil {
		return "", &Error{http.StatusInternalServerError, fmt.Sprintf("CheckID %q does not have associated TTL", id)}
	}
	return c.ttl.set(status, output), nil
}

// Close stops every check and refuses new ones.
func (r *Runner) Close() {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	r.closed = true
	all := r.checks
	r.checks = map[string]*running{}
	r.mu.Unlock()
	for _, c := range all {
		c.stop()
	}
}

// probeLoop runs an interval check until ctx ends: first after the stagger,
// then Interval after each attempt ends, each attempt bounded by the
// check's timeout.
func probeLoop(ctx context.Context, done chan struct{}, d Definition, p prober, first time.Duration, notify func(status, output string)) {
	defer close(done)
	th := newThresholds(d)
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, d.effectiveTimeout())
		status, output := p.Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return // stopped mid-attempt: the result belongs to no one
		}
		if s, ok := th.apply(status); ok {
			notify(s, output)
		}
		t.Reset(d.Interval)
	}
}

// thresholds is Consul's status handler: counters start at their
// thresholds so the first result applies; afterwards a run of successes or
// failures must reach its threshold before the status moves.
type thresholds struct {
	successes, failures                        int
	beforePassing, beforeWarning, beforeCritic int
}

func newThresholds(d Definition) *thresholds {
	return &thresholds{
		successes: d.SuccessBeforePassing, failures: d.FailuresBeforeCritical,
		beforePassing: d.SuccessBeforePassing, beforeWarning: d.FailuresBeforeWarning,
		beforeCritic: d.FailuresBeforeCritical,
	}
}

// apply takes one raw result and says what to report, if anything. A
// failure that has reached FailuresBeforeWarning but not
// FailuresBeforeCritical is reported as a warning.
func (t *thresholds) apply(status string) (string, bool) {
	if status == Passing || status == Warning {
		t.successes++
		t.failures = 0
		return status, t.successes >= t.beforePassing
	}
	t.successes = 0
	t.failures++
	switch {
	case t.failures >= t.beforeCritic:
		return Critical, true
	case t.failures >= t.beforeWarning:
		return Warning, true
	}
	return "", false
}

// ttlCheck goes critical on its own when nobody sets it within its TTL.
type ttlCheck struct {
	d      Definition
	notify func(status, output string)

	mu         sync.Mutex // held across notify so a check's reports stay ordered
	timer      *time.Timer
	gen        uint64 // which arming of the timer is current
	lastOutput string
	stopped    bool
}

func newTTLCheck(d Definition, notify func(status, output string)) *ttlCheck {
	c := &ttlCheck{d: d, notify: notify}
	c.mu.Lock()
	c.arm()
	c.mu.Unlock()
	return c
}

// arm restarts the TTL. Each arming gets its own generation so a timer that
// fired just as a set came in cannot undo that set.
func (c *ttlCheck) arm() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.gen++
	g := c.gen
	c.timer = time.AfterFunc(c.d.TTL, func() { c.expire(g) })
}

func (c *ttlCheck) expire(g uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || g != c.gen {
		return
	}
	out := "TTL expired"
	if c.lastOutput != "" {
		out += " (last output before timeout follows): " + c.lastOutput
	}
	c.notify(Critical, out)
}

func (c *ttlCheck) set(status, output string) string {
	if n := c.d.OutputMaxSize; n > 0 && len(output) > n {
		output = fmt.Sprintf("%s ... (captured %d of %d bytes)", output[:n], n, len(output))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return output
	}
	c.lastOutput = output
	c.arm()
	c.notify(status, output)
	return output
}

func (c *ttlCheck) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.timer.Stop()
}
