package conformance

import (
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// Index headers and blocking queries: S45, S46.

func blockingCases() []Case {
	return []Case{
		{clause: "S45", name: "key-index-is-modifyindex", run: s45KeyIndex},
		{clause: "S45", name: "missing-key-and-list-include-deletions", run: s45Deletions},
		{clause: "S45", name: "index-never-zero", run: s45NeverZero},
		{clause: "S46", name: "write-wakes-blocked-read", run: func(t *caseT) { s46Wakes(t, "set") }},
		{clause: "S46", name: "release-wakes-blocked-read", run: func(t *caseT) { s46Wakes(t, "release") }},
		{clause: "S46", name: "invalidation-wakes-blocked-read", run: func(t *caseT) { s46Wakes(t, "destroy") }},
		{clause: "S46", name: "delete-wakes-blocked-read", run: func(t *caseT) { s46Wakes(t, "delete") }},
		{clause: "S46", name: "create-wakes-read-of-missing-key", run: s46Create},
		{clause: "S46", name: "write-under-prefix-wakes-list", run: s46List},
		{clause: "S46", name: "blocks-until-wait-if-unchanged", run: s46Timeout},
	}
}

// blockResult is what a blocking read returned and when.
type blockResult struct {
	r    *resp
	at   time.Time
	took time.Duration
}

// blockingGet starts GET path?index=idx&wait=wait (path may carry a query)
// and returns a function that waits for its answer.
func (t *caseT) blockingGet(path string, idx uint64, wait string) func() blockResult {
	sep := "?"
	for _, c := range path {
		if c == '?' {
			sep = "&"
		}
	}
	var out blockResult
	start := time.Now()
	done := t.Go(func() {
		out.r = t.Do(http.MethodGet, path+sep+"index="+u64(idx)+"&wait="+wait, nil)
		out.at = time.Now()
		out.took = out.at.Sub(start)
	})
	return func() blockResult {
		done()
		if out.r == nil {
			t.Fatalf("blocking read of %s did not answer", path)
		}
		return out
	}
}

func s45KeyIndex(t *caseT) {
	k := t.Key("k")
	s := t.CreateUnboundSession(nil)
	t.Set(k, "1")
	for _, step := range []func(){
		func() {},
		func() { t.Set(k, "2") },
		func() { t.Require(t.Acquire(k, s, ""), "acquire failed") },
		func() { t.Require(t.Release(k, s, "3"), "release failed") },
	} {
		step()
		r := t.GetRaw(k, "")
		t.Require(r.Code == 200, "GET %s: %s", k, r)
		var ps []*api.KVPair
		t.decode("GET", r, &ps)
		t.Require(len(ps) == 1, "GET %s: want one entry", k)
		t.Equal("X-Consul-Index of an existing key", r.Index(), ps[0].ModifyIndex)
	}
}

func s45Deletions(t *caseT) {
	a, b := t.Key("dir/a"), t.Key("dir/b")
	t.Set(a, "1")
	t.Set(b, "1")
	pa, pb := t.MustGet(a), t.MustGet(b)
	_, rl := t.List(t.Key("dir/"))
	t.Equal("list index of two keys", rl.Index(), max(pa.ModifyIndex, pb.ModifyIndex))
	t.Require(t.Delete(b, ""), "delete failed")
	_, rl = t.List(t.Key("dir/"))
	t.Check(rl.Code == 200 && rl.Index() > pb.ModifyIndex,
		"list index after deleting b must count the deletion: got %d, b was last written at %d", rl.Index(), pb.ModifyIndex)
	del := rl.Index()
	_, rb := t.List(b)
	t.Check(rb.Code == 404 && rb.Index() == del, "list of only the deleted key: want 404 at %d, got %s index %d", del, rb, rb.Index())
	r := t.GetRaw(b, "")
	t.Check(r.Code == 404, "GET of a deleted key: want 404, got %s", r)
	t.Check(r.Index() >= del, "GET of a deleted key: index %d below its deletion at %d", r.Index(), del)
	t.Require(t.Delete(a, ""), "delete failed")
	_, rl = t.List(t.Key("dir/"))
	t.Check(rl.Code == 404 && rl.Index() > del, "list of a prefix whose keys are all deleted: want 404 above %d, got %s index %d", del, rl, rl.Index())
}

func s45NeverZero(t *caseT) {
	for _, p := range []string{
		"/v1/kv/" + t.Key("never-written"),
		"/v1/kv/" + t.Key("nothing/") + "?recurse",
		"/v1/session/info/" + fakeID(),
		"/v1/session/node/" + t.HomeNode(),
		"/v1/session/list",
	} {
		r := t.Do(http.MethodGet, p, nil)
		t.Check(r.Code == 200 || r.Code == 404, "GET %s: %s", p, r)
		t.Check(r.Header.Get("X-Consul-Index") != "" && r.Index() > 0,
			"GET %s: X-Consul-Index %q, want a positive index", p, r.Header.Get("X-Consul-Index"))
	}
}

func s46Wakes(t *caseT, how string) {
	k := t.Key("k")
	s := t.CreateUnboundSession(nil)
	if how == "set" || how == "delete" {
		t.Set(k, "before")
	} else {
		t.Require(t.Acquire(k, s, "before"), "acquire failed")
	}
	before := t.MustGet(k)
	wait := t.blockingGet("/v1/kv/"+k, before.ModifyIndex, "10s")
	t.Sleep(500 * time.Millisecond)
	sent := time.Now()
	switch how {
	case "set":
		t.Set(k, "after")
	case "release":
		t.Require(t.Release(k, s, "before"), "release failed")
	case "destroy":
		t.Destroy(s)
	case "delete":
		t.Require(t.Delete(k, ""), "delete failed")
	}
	res := wait()
	t.Check(!res.at.Before(sent), "blocking read answered before the %s was sent", how)
	t.Check(res.took < 8*time.Second, "blocking read not woken by %s (answered after %v)", how, res.took)
	t.Check(res.r.Index() > before.ModifyIndex, "woken read's index %d not above %d", res.r.Index(), before.ModifyIndex)
	if how == "delete" {
		t.Check(res.r.Code == 404, "read woken by delete: want 404, got %s", res.r)
		return
	}
	t.Require(res.r.Code == 200, "woken read: %s", res.r)
	var ps []*api.KVPair
	t.decode("woken read", res.r, &ps)
	t.Require(len(ps) == 1, "woken read: want one entry")
	switch how {
	case "set":
		t.Equal("value seen by the woken read", string(ps[0].Value), "after")
	default:
		t.Equal("Session seen by the woken read", ps[0].Session, "")
	}
}

func s46Create(t *caseT) {
	k := t.Key("k")
	r := t.GetRaw(k, "")
	t.Require(r.Code == 404, "GET of a missing key: %s", r)
	// A missing key's index is the whole KV table's, which other writers
	// move: a 404 may come back early with a higher index, and the client
	// then blocks again from there. Only the creation may produce the 200.
	var sent time.Time
	var created atomicTime
	idx := r.Index()
	done := t.Go(func() {
		for i := 0; ; i++ {
			res := t.blockingGet("/v1/kv/"+k, idx, "10s")()
			if res.r.Code == 200 {
				created.set(res.at)
				return
			}
			if !t.Check(res.r.Code == 404, "blocked read of a missing key: %s", res.r) {
				return
			}
			if !t.Check(res.r.Index() > idx || res.took >= 9*time.Second,
				"blocked read of a missing key answered after %v at index %d, not above %d", res.took, res.r.Index(), idx) {
				return
			}
			if !t.Check(i < 1000, "blocked read of a missing key kept answering without the key") {
				return
			}
			idx = res.r.Index()
		}
	})
	t.Sleep(500 * time.Millisecond)
	sent = time.Now()
	t.Set(k, "born")
	done()
	at := created.get()
	if t.Check(!at.IsZero(), "blocked read never saw the created key") {
		t.Check(at.Sub(sent) < 8*time.Second, "read of a missing key woken %v after its creation", at.Sub(sent))
	}
}

// atomicTime is a time written by one goroutine and read by another.
type atomicTime struct {
	mu sync.Mutex
	t  time.Time
}

func (a *atomicTime) set(t time.Time) { a.mu.Lock(); a.t = t; a.mu.Unlock() }
func (a *atomicTime) get() time.Time  { a.mu.Lock(); defer a.mu.Unlock(); return a.t }

func s46List(t *caseT) {
	dir := t.Key("dir/")
	t.Set(dir+"a", "1")
	_, r := t.List(dir)
	wait := t.blockingGet("/v1/kv/"+dir+"?recurse", r.Index(), "10s")
	t.Sleep(500 * time.Millisecond)
	t.Set(dir+"b", "2")
	res := wait()
	t.Check(res.took < 8*time.Second, "list not woken by a write under its prefix (answered after %v)", res.took)
	var ps []*api.KVPair
	t.decode("woken list", res.r, &ps)
	t.Equal("entries seen by the woken list", len(ps), 2)
}

func s46Timeout(t *caseT) {
	k, sibling := t.Key("k"), t.Key("k-sibling")
	t.Set(k, "still")
	before := t.MustGet(k)
	wait := t.blockingGet("/v1/kv/"+k, before.ModifyIndex, "2s")
	// Writes elsewhere must not end the wait: the key's index does not move.
	for i := 0; i < 3; i++ {
		t.Sleep(300 * time.Millisecond)
		t.Set(sibling, u64(uint64(i)))
	}
	res := wait()
	t.Check(res.took >= 1900*time.Millisecond, "blocking read with wait=2s on an unchanged key answered after %v", res.took)
	t.Check(res.r.Code == 200 && res.r.Index() == before.ModifyIndex,
		"timed-out read: want 200 at index %d, got %s index %d", before.ModifyIndex, res.r, res.r.Index())
}
