package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/recipe"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// Cluster is one run's set-up: the function given to Check or Simulate
// receives it before the cluster boots, creates the run's own state (a
// resource the processes share, say) and starts processes with Go. It is
// called again for every rerun (a shrink's candidates), so state made in
// it is fresh each time.
type Cluster struct {
	procs []*procSpec
}

type procSpec struct {
	name string
	fn   func(ctx context.Context, p *Process)
}

// Go adds a process: fn runs on a client host of its own, talking to its
// own client agent, from when the cluster is up until the run's Duration
// has passed, when ctx is cancelled. fn must return soon after ctx is
// done. Processes are named p1, p2, … in the order Go is called.
func (c *Cluster) Go(fn func(ctx context.Context, p *Process)) {
	c.procs = append(c.procs, &procSpec{name: fmt.Sprintf("p%d", len(c.procs)+1), fn: fn})
}

// Process is the user's code as one process of the run: its clients, its
// clock, its randomness and its record of what it did. A process fault
// (ProcessPause, ProcessCrash, ProcessPartition) hits the whole host: the
// process and its client agent.
//
// A stopped process (paused or crashed) runs none of its code, but Go
// cannot stop a goroutine from outside: the harness stops it at the next
// point where it calls the harness or the network: Sleep, Now, Record,
// Begin, End, and every request of API and Recipe (their own background
// goroutines, such as a session's renewals, included). Between two such
// points the code runs in no virtual time at all, as every goroutine in a
// synctest bubble does.
type Process struct {
	name  string
	agent string
	h     *runState
	api   *api.Client
	rc    *recipe.Client
	rnd   *rand.Rand
	clock *core.ClientClock

	mu      sync.Mutex
	frozen  chan struct{} // non-nil while stopped; closed by thaw
	crashed bool
	stopped bool // the run is over: gates no longer hold
	open    map[string]bool
}

// Name is the process's name (p1, p2, …), also its host on the simulated
// network and its name in the history.
func (p *Process) Name() string { return p.name }

// API is a consul/api client whose HTTP goes to the process's own client
// agent over the simulated network.
func (p *Process) API() *api.Client { return p.api }

// Recipe is a recipe.Client on the same agent, its Clock the process's
// own clock (its timers do not fire while the process is stopped).
func (p *Process) Recipe() *recipe.Client { return p.rc }

// Rand is the process's own source of randomness, drawn from the run's
// seed, so a rerun of the seed makes the same choices.
func (p *Process) Rand() *rand.Rand { return p.rnd }

// Now is the current virtual instant, as the history and the fault
// schedule count it (from when the processes started). It is the true
// instant, not the process's own possibly skewed clock.
func (p *Process) Now() time.Duration {
	p.gate()
	return p.h.now()
}

// Sleep waits d of the process's own time, or until ctx is done (then it
// returns ctx's error). A pause that comes meanwhile stretches it: the
// process wakes only once it runs again.
func (p *Process) Sleep(ctx context.Context, d time.Duration) error {
	p.gate()
	if d > 0 {
		t := time.NewTimer(p.bubble(d))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	p.gate()
	return ctx.Err()
}

// Record notes that the process did or saw something (kind, value) now.
func (p *Process) Record(kind string, value any) {
	p.gate()
	p.h.record(Record{Process: p.name, Kind: kind, Value: value})
}

// Begin records that the process now believes name ("leader"), until End.
// AtMostOne states that no two processes believe it at once.
func (p *Process) Begin(name string) {
	p.gate()
	p.mu.Lock()
	p.open[name] = true
	p.mu.Unlock()
	p.h.record(Record{Process: p.name, Kind: KindBegin, Name: name})
}

// End records that the process no longer believes name.
func (p *Process) End(name string) {
	p.gate()
	p.mu.Lock()
	delete(p.open, name)
	p.mu.Unlock()
	p.h.record(Record{Process: p.name, Kind: KindEnd, Name: name})
}

// believing reports whether the process is inside a Begin now (process
// faults aim at such a process first: the holder).
func (p *Process) believing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open) > 0
}

// bubble converts d of the process's time to bubble time (rounded up, so no
// wait ends early on the process's clock).
func (p *Process) bubble(d time.Duration) time.Duration {
	p.clock.Mu.Lock()
	r := p.clock.Rate
	p.clock.Mu.Unlock()
	return time.Duration(math.Ceil(float64(max(d, 0)) / r))
}

// gate returns once the process may run: at once unless it is stopped. A
// crashed process stays stopped until the run ends.
func (p *Process) gate() {
	p.mu.Lock()
	ch := p.frozen
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (p *Process) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil && !p.stopped {
		p.frozen = make(chan struct{})
	}
}

func (p *Process) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil && !p.crashed {
		close(p.frozen)
		p.frozen = nil
	}
}

func (p *Process) crash() {
	p.freeze()
	p.mu.Lock()
	p.crashed = true
	p.mu.Unlock()
}

// release lets every gate through for good: the run is over, and a
// crashed process's goroutines must be able to end.
func (p *Process) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}

func (p *Process) isCrashed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crashed
}

// errCrashed is what a crashed process's requests fail with once the run
// has ended (before that they never leave).
var errCrashed = errors.New("sim: the process has crashed")

// gatedTransport holds each request of a stopped process until it runs
// again; a crashed process's requests never leave.
type gatedTransport struct {
	p     *Process
	inner http.RoundTripper
}

func (g gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	g.p.gate()
	if g.p.isCrashed() {
		return nil, errCrashed
	}
	return g.inner.RoundTrip(req)
}

// processClock is the process's clock as recipe.Clock: a timer that comes
// due while the process is stopped fires once it runs again.
type processClock struct{ p *Process }

func (c processClock) Now() time.Time { return c.p.clock.Now() }

func (c processClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := time.AfterFunc(c.p.bubble(d), func() {
		c.p.gate()
		f()
	})
	return t.Stop
}

// newProcess builds a process's clients on the simulated network.
func newProcess(h *runState, name, agent string) (*Process, error) {
	p := &Process{name: name, agent: agent, h: h, rnd: core.Stream(h.seed, "process/"+name),
		clock: core.NewClientClock(0, 1), open: map[string]bool{}}
	rc, err := p.Client(p.ManagementToken())
	if err != nil {
		return nil, err
	}
	p.rc, p.api = rc, rc.API
	return p, nil
}

// Client is a new recipe.Client (its API beside it) on the process's own
// agent, network and clock, presenting token: with Options.ACL, a process
// sees what its code does under a narrower token than the management one
// its API and Recipe carry. "" sends no token (the anonymous one).
func (p *Process) Client(token string) (*recipe.Client, error) {
	hc := &http.Client{Transport: gatedTransport{p: p, inner: core.SimTransport(p.h.net, p.name)}}
	rc, err := recipe.NewClient(&api.Config{Address: p.agent + ":" + core.HttpPort, Scheme: "http", HttpClient: hc, Token: token})
	if err != nil {
		return nil, fmt.Errorf("sim: process %s: %w", p.name, err)
	}
	rc.Clock = processClock{p: p}
	return rc, nil
}

// ManagementToken is the secret of the run's initial management token
// with Options.ACL, "" without.
func (p *Process) ManagementToken() string {
	if p.h.acl == nil {
		return ""
	}
	return p.h.acl.Management
}
