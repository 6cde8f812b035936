package linearizability

import (
	"slices"
	"sync"

	"github.com/tenurekv/tenure/model"
)

// Recorder builds a History while a test runs; it is safe for concurrent
// use. Times come from now, in nanoseconds (time.Now().UnixNano() inside a
// synctest bubble gives virtual time).
type Recorder struct {
	mu      sync.Mutex
	now     func() int64
	h       History
	pending map[int]bool // indexes into h.Ops still awaiting an answer
}

// NewRecorder starts a history whose catalog begins as setup (Register
// commands).
func NewRecorder(now func() int64, setup ...model.Command) *Recorder {
	return &Recorder{now: now, h: History{Setup: slices.Clone(setup)}, pending: map[int]bool{}}
}

// Pending is an operation that has been called and not yet answered.
type Pending struct {
	r *Recorder
	i int
}

// Call records that client sent in, now.
func (r *Recorder) Call(client int, in Input) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Ops = append(r.h.Ops, Op{Client: client, Call: Nanos(r.now()), Input: in})
	i := len(r.h.Ops) - 1
	r.pending[i] = true
	return &Pending{r: r, i: i}
}

// Return records the answer, now. Only the first of Return and Lost counts.
func (p *Pending) Return(out Output) {
	p.finish(func(op *Op) { op.Return, op.Output = Nanos(p.r.now()), out })
}

// Lost records that the outcome will never be known (timeout, broken
// connection, an error that does not prove the request was not applied).
func (p *Pending) Lost() {
	p.finish(func(op *Op) { op.Return, op.Unknown = Nanos(p.r.now()), true })
}

func (p *Pending) finish(f func(*Op)) {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	if !p.r.pending[p.i] {
		return
	}
	delete(p.r.pending, p.i)
	f(&p.r.h.Ops[p.i])
}

// Event records a server-initiated change known to lie within
// [earliest, latest].
func (r *Recorder) Event(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Events = append(r.h.Events, ev)
}

// Fault records an injected fault for the failure visualisation.
func (r *Recorder) Fault(f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Faults = append(r.h.Faults, f)
}

// SetLockDelaySlack sets History.LockDelaySlack.
func (r *Recorder) SetLockDelaySlack(d Nanos) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.LockDelaySlack = d
}

// SetLockDelayMayBeLost sets History.LockDelayMayBeLost.
func (r *Recorder) SetLockDelayMayBeLost() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.LockDelayMayBeLost = true
}

// History returns a copy of what was recorded; operations still pending
// are included with an unknown outcome.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.h
	h.Setup = slices.Clone(h.Setup)
	h.Ops = slices.Clone(h.Ops)
	h.Events = slices.Clone(h.Events)
	h.Faults = slices.Clone(h.Faults)
	for i := range r.pending {
		h.Ops[i].Unknown = true
		h.Ops[i].Return = h.Ops[i].Call
	}
	return h
}
