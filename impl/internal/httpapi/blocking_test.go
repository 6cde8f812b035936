package httpapi_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

type getResult struct {
	pair *api.KVPair
	meta *api.QueryMeta
	err  error
}

func (f *fixture) blockingGet(key string, index uint64, wait time.Duration) <-chan getResult {
	out := make(chan getResult, 1)
	go func() {
		p, m, err := f.client.KV().Get(key, &api.QueryOptions{WaitIndex: index, WaitTime: wait})
		out <- getResult{p, m, err}
	}()
	return out
}

// parkedAfter waits until one blocking read has armed its timer and read
// the state since reads0, so it is waiting for a change.
func (f *fixture) parkedAfter(reads0 int) {
	f.t.Helper()
	eventually(f.t, "parked read", func() bool {
		return f.clock.Pending() == 1 && f.b.Store().Reads() > reads0
	})
}

func receive(t *testing.T, what string, ch <-chan getResult) getResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer (the read never woke)", what)
	}
	return getResult{}
}

// The manual clock never reaches the wait, so only the release can answer
// the blocked read (S46).
func TestBlockingGetWokenByRelease(t *testing.T) {
	f := newFixture(t)
	sid := f.session(nil)
	f.acquire("lock", sid, "")
	_, meta, err := f.client.KV().Get("lock", nil)
	if err != nil {
		t.Fatal(err)
	}
	reads := f.b.Store().Reads()
	ch := f.blockingGet("lock", meta.LastIndex, time.Minute)
	f.parkedAfter(reads)
	if _, _, err := f.client.KV().Release(&api.KVPair{Key: "lock", Session: sid}, nil); err != nil {
		t.Fatal(err)
	}
	r := receive(t, "blocked read after release", ch)
	if r.pair == nil || r.pair.Session != "" || r.meta.LastIndex <= meta.LastIndex || r.meta.LastIndex != r.pair.ModifyIndex {
		t.Fatalf("woken read: %+v index %d (was %d)", r.pair, r.meta.LastIndex, meta.LastIndex)
	}
	if f.clock.Pending() != 0 {
		t.Fatal("the woken read left its wait timer armed")
	}
}

// A read that nothing wakes answers the unchanged data when its wait ends
// on the backend's clock; ?wait is capped at 600s.
func TestBlockingWaitOnBackendClock(t *testing.T) {
	f := newFixture(t)
	f.put("k", "v")
	_, meta, _ := f.client.KV().Get("k", nil)
	ch := f.blockingGet("k", meta.LastIndex, time.Hour)
	eventually(t, "blocked read", func() bool { return f.clock.Pending() == 1 })
	f.clock.Advance(599 * time.Second)
	if f.clock.Pending() != 1 {
		t.Fatal("a 1h wait ended before the 600s cap")
	}
	f.clock.Advance(time.Second)
	r := receive(t, "read at the cap", ch)
	if r.meta.LastIndex != meta.LastIndex || string(r.pair.Value) != "v" {
		t.Fatalf("timed-out read: %+v index %d", r.pair, r.meta.LastIndex)
	}
	// Without ?wait the default is 300s.
	ch = f.blockingGet("k", meta.LastIndex, 0)
	eventually(t, "blocked read", func() bool { return f.clock.Pending() == 1 })
	f.clock.Advance(299 * time.Second)
	if f.clock.Pending() != 1 {
		t.Fatal("a read without ?wait ended before 300s")
	}
	f.clock.Advance(time.Second)
	receive(t, "read at the default wait", ch)
}

// Options.Jitter adds up to wait/16 to each blocking wait.
func TestBlockingJitter(t *testing.T) {
	var limits []time.Duration
	f := newFixture(t, withOptions(httpapi.Options{Jitter: func(limit time.Duration) time.Duration {
		limits = append(limits, limit)
		return limit / 2
	}}))
	f.put("k", "v")
	_, meta, _ := f.client.KV().Get("k", nil)
	ch := f.blockingGet("k", meta.LastIndex, 16*time.Second)
	eventually(t, "blocked read", func() bool { return f.clock.Pending() == 1 })
	f.clock.Advance(16 * time.Second)
	if f.clock.Pending() != 1 {
		t.Fatal("the jittered wait ended at the bare wait")
	}
	f.clock.Advance(500 * time.Millisecond)
	receive(t, "jittered read", ch)
	if len(limits) != 1 || limits[0] != time.Second {
		t.Fatalf("jitter limits %v, want [1s]", limits)
	}
}

// A blocked read of a missing key ignores writes to other keys and answers
// when the key appears (CONSUL.md §7); a stale index answers at once.
func TestBlockingMissingKey(t *testing.T) {
	f := newFixture(t)
	f.put("other", "1")
	r := f.do(http.MethodGet, "/v1/kv/wanted", nil)
	want(t, "missing", r, http.StatusNotFound, "")
	idx := r.header.Get("X-Consul-Index")
	ch := make(chan reply, 1)
	reads := f.b.Store().Reads()
	go func() { ch <- f.do(http.MethodGet, "/v1/kv/wanted?index="+idx, nil) }()
	f.parkedAfter(reads)
	reads = f.b.Store().Reads()
	f.put("other", "2") // raises the KV table index, which the 404 reported
	// Let the read wake and look again: a read that answered now would answer 404.
	eventually(t, "re-read after the other write", func() bool { return f.b.Store().Reads() > reads })
	f.put("wanted", "here")
	select {
	case got := <-ch:
		want(t, "read of the missing key", got, http.StatusOK, "")
		if p := decode[[]api.KVPair](t, got); p[0].Key != "wanted" {
			t.Fatalf("answer %s", got.text())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked read of a missing key never answered")
	}
	// An index the result already passed answers at once, with no timer.
	r = f.do(http.MethodGet, "/v1/kv/nothing?index=1", nil)
	want(t, "stale index", r, http.StatusNotFound, "")
}

func TestBlockingSessionList(t *testing.T) {
	f := newFixture(t)
	_, meta, err := f.client.Session().List(nil)
	if err != nil || meta.LastIndex != 1 {
		t.Fatalf("empty list index %d (want 1) %v", meta.LastIndex, err)
	}
	type listResult struct {
		n   int
		idx uint64
	}
	ch := make(chan listResult, 1)
	go func() {
		l, m, err := f.client.Session().List(&api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		if err != nil {
			ch <- listResult{-1, 0}
			return
		}
		ch <- listResult{len(l), m.LastIndex}
	}()
	eventually(t, "blocked list", func() bool { return f.clock.Pending() == 1 })
	f.put("unrelated", "x") // KV writes do not move the sessions index
	id := f.session(nil)
	select {
	case got := <-ch:
		se, _, _ := f.client.Session().Info(id, nil)
		if got.n != 1 || got.idx != se.CreateIndex {
			t.Fatalf("woken list: %d sessions at index %d, want 1 at %d", got.n, got.idx, se.CreateIndex)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked session list never answered")
	}
}

func TestConsistencyModes(t *testing.T) {
	f := newFixture(t)
	f.put("k", "v")
	for q, mode := range map[string]string{"": "leader", "?stale": "stale", "?consistent": "consistent"} {
		r := f.do(http.MethodGet, "/v1/kv/k"+q, nil)
		want(t, q, r, http.StatusOK, "")
		if got := r.header.Get("X-Consul-Effective-Consistency"); got != mode {
			t.Fatalf("%s: consistency %q, want %q", q, got, mode)
		}
	}
	want(t, "stale+consistent", f.do(http.MethodGet, "/v1/kv/k?stale&consistent", nil),
		http.StatusBadRequest, "Cannot specify ?stale with ?consistent, conflicting semantics.")
	f.b.SetVerifyError(errors.New("leadership lost"))
	want(t, "consistent read on a deposed leader", f.do(http.MethodGet, "/v1/kv/k?consistent", nil),
		http.StatusInternalServerError, "leadership lost")
	want(t, "default read skips the quorum round", f.do(http.MethodGet, "/v1/kv/k", nil), http.StatusOK, "")
}
