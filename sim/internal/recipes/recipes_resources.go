package recipes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/recipe"
)

// The semaphore's resources, as they appear in SemWrite and the trace.
const (
	// SemVerified admits a request only if, at one index, the contender's
	// sequencer is valid and its session is among .lock's Holders (S51).
	SemVerified = "sem-verified"
	// SemUnverified trusts whoever believes it holds a slot.
	SemUnverified = "sem-unverified"
)

// resCheckTimeout bounds one verification read by a resource.
const resCheckTimeout = 5 * time.Second

// clusterReader is a resource's own view of the cluster: read-only txns with
// ?consistent (the leader confirms its leadership first), so that requests a
// resource serialises are verified in index order. It moves to the next
// server when one cannot answer.
type clusterReader struct {
	hc      *http.Client
	servers []string
	mu      sync.Mutex
	next    int
}

func (r *clusterReader) server() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers[r.next%len(r.servers)]
}

func (r *clusterReader) rotate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
}

// txn runs a read-only txn. ok is the txn's success; on failure errs says
// why. err is set when there was no definite answer.
func (r *clusterReader) Txn(ctx context.Context, ops []model.KVOp) (ok bool, results []model.KVEntry, errs []model.TxnError, err error) {
	type kvOp struct {
		Verb    string
		Key     string
		Index   uint64 `json:",omitempty"`
		Session string `json:",omitempty"`
	}
	wire := make([]map[string]kvOp, 0, len(ops))
	for _, op := range ops {
		wire = append(wire, map[string]kvOp{"KV": {Verb: string(op.Verb), Key: op.Key, Index: op.Index, Session: op.Session}})
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return false, nil, nil, fmt.Errorf("encode txn: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+r.server()+":"+core.HttpPort+"/v1/txn?consistent", bytes.NewReader(body))
	if err != nil {
		return false, nil, nil, fmt.Errorf("build txn: %w", err)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		r.rotate()
		return false, nil, nil, fmt.Errorf("txn: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, nil, nil, fmt.Errorf("read txn answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		r.rotate()
		return false, nil, nil, fmt.Errorf("txn: %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var out struct {
		Results []struct{ KV *model.KVEntry }
		Errors  []model.TxnError
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return false, nil, nil, fmt.Errorf("decode txn answer: %w", err)
	}
	for _, res := range out.Results {
		if res.KV != nil {
			results = append(results, *res.KV)
		}
	}
	if resp.StatusCode == http.StatusConflict && len(out.Errors) == 0 {
		return false, nil, nil, errors.New("txn: 409 without errors")
	}
	return resp.StatusCode == http.StatusOK, results, out.Errors, nil
}

// checkSequencer is the election's fenced resource check (a SequencerChecker).
func (r *clusterReader) checkSequencer(ctx context.Context, seq model.Sequencer) error {
	ok, _, errs, err := r.Txn(ctx, []model.KVOp{{Verb: model.KVCheckSequencer, Key: seq.Key, Session: seq.Session, Index: seq.LockIndex}})
	switch {
	case err != nil:
		return fmt.Errorf("check-sequencer outcome unknown: %w", err)
	case !ok && len(errs) > 0:
		return errors.New(errs[0].What)
	case !ok:
		return errors.New("check-sequencer refused")
	}
	return nil
}

// semResource is the semaphore's pair of resources. Each serialises its
// requests, so a verified request's check and its acceptance are atomic with
// respect to the others.
type semResource struct {
	rec    *core.Recorder
	log    *recipeLog
	reader *clusterReader
	limit  int
	// Each resource's lock; see chanLock.
	verifiedMu, unverifiedMu chanLock
}

// chanLock is a mutex for code that blocks on the simulated network while
// holding it. A goroutine waiting on a sync.Mutex is not durably blocked,
// so synctest would never advance virtual time past the holder's network
// wait; one waiting on a channel is.
type chanLock chan struct{}

func newChanLock() chanLock { return make(chanLock, 1) }

func (l chanLock) Lock()   { l <- struct{}{} }
func (l chanLock) Unlock() { <-l }

// serialised runs h one request at a time under l.
func serialised(l chanLock, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.Lock()
		defer l.Unlock()
		h.ServeHTTP(w, r)
	})
}

// semRecord is .lock's value (package recipe's layout, which is api's).
type SemRecord struct {
	Limit   int
	Holders map[string]bool
}

func (s *semResource) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		li, err := strconv.ParseUint(q.Get("index"), 10, 64)
		if err != nil || q.Get("key") == "" || q.Get("client") == "" || q.Get("session") == "" {
			http.Error(w, "bad request: need client, key, session and a numeric index", http.StatusBadRequest)
			return
		}
		seq := model.Sequencer{Key: q.Get("key"), LockIndex: li, Session: q.Get("session")}
		if ok, why := s.write(req.Context(), q.Get("client"), seq, q.Get("verify") == "1"); !ok {
			http.Error(w, why, http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// write serves one request; only the verified resource can refuse.
func (s *semResource) write(ctx context.Context, client string, seq model.Sequencer, verify bool) (bool, string) {
	sw := SemWrite{Resource: SemUnverified, Client: client, Seq: seq, Accepted: true}
	mu := s.unverifiedMu
	if verify {
		mu = s.verifiedMu
	}
	mu.Lock()
	defer mu.Unlock()
	if verify {
		sw.Resource = SemVerified
		sw.CheckCall = s.rec.Elapsed()
		sw.Holders, sw.Reason = s.verify(ctx, seq)
		sw.Accepted = sw.Reason == ""
	}
	sw.At = s.rec.Elapsed()
	s.log.semWrite(sw)
	s.rec.Add(core.Event{Kind: core.KindWrite, Node: client, Write: &core.ResWrite{Resource: sw.Resource, Client: client, Seq: seq,
		Accepted: sw.Accepted, Reason: sw.Reason, CheckCall: sw.CheckCall, Mode: "verify"}})
	return sw.Accepted, sw.Reason
}

// verify checks, in one read-only txn, the contender's sequencer and that its
// session is among .lock's Holders; it returns the Holders it read and ""
// or why the request is refused.
func (s *semResource) verify(ctx context.Context, seq model.Sequencer) ([]string, string) {
	cctx, cancel := context.WithTimeout(ctx, resCheckTimeout)
	defer cancel()
	lockKey := RecipeSemPrefix + "/" + recipe.SemaphoreKey
	ok, results, errs, err := s.reader.Txn(cctx, []model.KVOp{
		{Verb: model.KVCheckSequencer, Key: seq.Key, Session: seq.Session, Index: seq.LockIndex},
		{Verb: model.KVGetOrEmpty, Key: lockKey},
	})
	switch {
	case err != nil:
		return nil, "verify: " + err.Error()
	case !ok && len(errs) > 0:
		return nil, "check-sequencer: " + errs[0].What
	case !ok:
		return nil, "verify refused"
	}
	i := slices.IndexFunc(results, func(e model.KVEntry) bool { return e.Key == lockKey })
	if i < 0 {
		return nil, "verify: no " + lockKey + " in the answer"
	}
	var r SemRecord
	if v := results[i].Value; len(v) > 0 {
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, "verify: decode " + lockKey + ": " + err.Error()
		}
	}
	if results[i].Flags != api.SemaphoreFlagValue && len(results[i].Value) > 0 {
		return nil, fmt.Sprintf("verify: %s has flags %#x", lockKey, results[i].Flags)
	}
	holders := slices.Sorted(maps.Keys(r.Holders))
	switch {
	case !r.Holders[seq.Session]:
		return holders, "session " + seq.Session + " is not among the holders"
	case len(r.Holders) > s.limit:
		return holders, fmt.Sprintf("%d holders listed, limit %d", len(r.Holders), s.limit)
	}
	return holders, ""
}
