package rpc

import "sync"

// workerPool runs forwarded requests on goroutines that are used again.
// net/rpc starts a goroutine per request, and the handler chain below it
// (HTTP routing, the server's apply path) needs a deeper stack than a new
// goroutine starts with: growing it by copying took about a tenth of a
// loaded leader's CPU (runtime.copystack in a 64-client profile). A worker
// keeps the stack it grew; net/rpc's goroutine only waits for it.
type workerPool struct {
	mu      sync.Mutex
	idle    []chan poolJob // workers waiting for a job, most recent last
	maxIdle int
	closed  bool
	started int // workers started (tests)
}

type poolJob struct {
	job  runner
	done chan struct{} // closed once the worker is idle again or gone
}

// runner is a job. A forwarded request's arguments are one (ForwardArgs),
// so that handing it over allocates nothing; jobFunc makes a func one.
type runner interface{ run() }

type jobFunc func()

func (f jobFunc) run() { f() }

func newWorkerPool(maxIdle int) *workerPool { return &workerPool{maxIdle: maxIdle} }

// run runs job on an idle worker, or on a new one if none is idle, and
// returns when job has.
func (p *workerPool) run(job runner) {
	j := poolJob{job: job, done: make(chan struct{})}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		// Taken off the list under the lock, so close cannot close it.
		ch := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- j
	} else {
		p.started++
		p.mu.Unlock()
		ch := make(chan poolJob, 1)
		ch <- j
		go p.work(ch)
	}
	// A fresh channel, not one reused through a sync.Pool: a channel
	// made outside a synctest bubble (the simulator's, the tests') does
	// not count as durably blocking inside it.
	<-j.done
}

// work runs the jobs sent on ch, waiting idle in between, until the pool
// has enough idle workers or is closed.
func (p *workerPool) work(ch chan poolJob) {
	for j := range ch {
		j.job.run()
		p.mu.Lock()
		keep := !p.closed && len(p.idle) < p.maxIdle
		if keep {
			p.idle = append(p.idle, ch)
		}
		p.mu.Unlock()
		close(j.done)
		if !keep {
			return
		}
	}
}

// close ends the idle workers; busy ones end after their job.
func (p *workerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, ch := range p.idle {
		close(ch)
	}
	p.idle = nil
}
