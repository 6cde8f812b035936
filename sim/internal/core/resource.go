package core

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tenurekv/tenure/model"
)

// Resource names, as they appear in the trace.
// ResNode hosts the resources; ResAddr is the resources' address on the simulated network.
const (
	ResNode = "res"
	ResAddr = ResNode + ":9000"
)

const (
	ResFenced   = "fenced"
	ResUnfenced = "unfenced"
)

// Fence modes of the fenced resource.
const (
	// FenceToken admits a write only if its LockIndex is at least the highest
	// the resource has accepted for the key, and a LockIndex is only ever
	// accepted from one session (the monotonic fencing token).
	FenceToken = "token"
	// FenceTxn additionally asks the cluster, with a linearizable txn
	// check-sequencer (S43), whether the sequencer is still valid.
	FenceTxn = "txn"
)

// SequencerChecker asks the cluster whether seq is valid now: nil if the
// check-sequencer txn succeeded, an error saying why not otherwise.
type SequencerChecker func(ctx context.Context, seq model.Sequencer) error

// Resources is the pair of simulated external resources the clients guard
// with their locks: a fenced one that checks sequencers and an unfenced one
// that trusts whoever writes. Writes to each key are serialised, so the
// fenced resource's check and its write are atomic with respect to other
// writes to the resource.
type Resources struct {
	rec   *Recorder
	Check SequencerChecker

	mu sync.Mutex
	// keyMu serialises writes per key. It is a channel, not a mutex: a
	// fenced write holds it across a network round trip, and inside a
	// synctest bubble only a goroutine blocked on a channel counts as
	// durably blocked; one waiting on a mutex would stop virtual time.
	keyMu map[string]chan struct{}
	// maxLI is the highest LockIndex the fenced resource accepted per key;
	// owner says which session it accepted each LockIndex from.
	maxLI map[string]uint64
	owner map[string]map[uint64]string
}

// newResources returns empty resources that record to rec and check
// sequencers with check (used in FenceTxn mode).
func NewResources(rec *Recorder, check SequencerChecker) *Resources {
	return &Resources{
		rec: rec, Check: check,
		keyMu: map[string]chan struct{}{},
		maxLI: map[string]uint64{},
		owner: map[string]map[uint64]string{},
	}
}

func (r *Resources) lockKey(key string) func() {
	r.mu.Lock()
	m := r.keyMu[key]
	if m == nil {
		m = make(chan struct{}, 1)
		r.keyMu[key] = m
	}
	r.mu.Unlock()
	m <- struct{}{}
	return func() { <-m }
}

// WriteFenced is a write to the fenced resource. It returns whether the
// write was accepted and, if not, why.
func (r *Resources) WriteFenced(ctx context.Context, client, mode string, seq model.Sequencer, value string) (bool, string) {
	unlock := r.lockKey(seq.Key)
	defer unlock()
	w := ResWrite{Resource: ResFenced, Client: client, Seq: seq, Value: value, Mode: mode}
	ok, why := r.admitToken(seq)
	if ok && mode == FenceTxn {
		w.CheckCall = r.rec.Elapsed()
		if err := r.Check(ctx, seq); err != nil {
			ok, why = false, "check-sequencer: "+err.Error()
		}
	}
	if ok {
		r.mu.Lock()
		r.maxLI[seq.Key] = max(r.maxLI[seq.Key], seq.LockIndex)
		if r.owner[seq.Key] == nil {
			r.owner[seq.Key] = map[uint64]string{}
		}
		r.owner[seq.Key][seq.LockIndex] = seq.Session
		r.mu.Unlock()
	}
	w.Accepted, w.Reason = ok, why
	r.rec.Add(Event{Kind: KindWrite, Node: client, Write: &w})
	return ok, why
}

// admitToken is the monotonic-token rule.
func (r *Resources) admitToken(seq model.Sequencer) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case seq.Session == "" || seq.LockIndex == 0:
		return false, "no sequencer"
	case seq.LockIndex < r.maxLI[seq.Key]:
		return false, fmt.Sprintf("lock index %d below %d already seen", seq.LockIndex, r.maxLI[seq.Key])
	}
	if s, ok := r.owner[seq.Key][seq.LockIndex]; ok && s != seq.Session {
		return false, fmt.Sprintf("lock index %d already used by session %s", seq.LockIndex, s)
	}
	return true, ""
}

// WriteUnfenced is a write to the unfenced resource: always accepted.
func (r *Resources) WriteUnfenced(client string, seq model.Sequencer, value string) {
	unlock := r.lockKey(seq.Key)
	defer unlock()
	r.rec.Add(Event{Kind: KindWrite, Node: client, Write: &ResWrite{
		Resource: ResUnfenced, Client: client, Seq: seq, Value: value, Accepted: true}})
}

// Handler serves the resources over the simulated network, so a write can be
// delayed, held by a pause or lost like any packet:
//
//	POST /write?res=fenced|unfenced&mode=token|txn&client=&key=&session=&index=&value=
//
// It answers 200 for an accepted write and 409 with the reason otherwise.
func (r *Resources) Handler(checkTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		li, err := strconv.ParseUint(q.Get("index"), 10, 64)
		if err != nil || q.Get("key") == "" || q.Get("client") == "" {
			http.Error(w, "bad write: need key, client and a numeric index", http.StatusBadRequest)
			return
		}
		seq := model.Sequencer{Key: q.Get("key"), LockIndex: li, Session: q.Get("session")}
		switch q.Get("res") {
		case ResUnfenced:
			r.WriteUnfenced(q.Get("client"), seq, q.Get("value"))
			w.WriteHeader(http.StatusOK)
		case ResFenced:
			mode := q.Get("mode")
			if mode != FenceToken && mode != FenceTxn {
				http.Error(w, "bad mode", http.StatusBadRequest)
				return
			}
			ctx, cancel := context.WithTimeout(req.Context(), checkTimeout)
			defer cancel()
			if ok, why := r.WriteFenced(ctx, q.Get("client"), mode, seq, q.Get("value")); !ok {
				http.Error(w, why, http.StatusConflict)
				return
			}
			w.WriteHeader(http.StatusOK)
		default:
			http.Error(w, "bad resource", http.StatusBadRequest)
		}
	})
}
