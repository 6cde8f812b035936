package conformance

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// Client recipes: S49-S51.

func recipeCases() []Case {
	return []Case{
		{clause: "S49", name: "one-holder-under-contention", run: s49Contention},
		{clause: "S49", name: "no-new-holder-during-lock-delay", run: s49NoHolderDuringDelay},
		{clause: "S50", name: "stale-holder-acts-only-sequencer-check-stops-it", run: s50StaleHolder},
		{clause: "S51", name: "semaphore-admits-at-most-limit", run: s51Semaphore},
	}
}

func s49Contention(t *caseT) {
	k := t.Key("k")
	const n = 8
	ss := make([]string, n)
	for i := range ss {
		ss[i] = t.CreateUnboundSession(nil)
	}
	for round := 0; round < 3; round++ {
		won := make([]bool, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r, err := t.env.do(t.ctx, "PUT", "/v1/kv/"+k+"?acquire="+ss[i], []byte(fmt.Sprint(i)))
				if err != nil {
					t.Errorf("contender %d: %v", i, err)
					return
				}
				won[i] = r.Code == 200 && r.Text() == "true"
			}()
		}
		close(start)
		wg.Wait()
		var winners []int
		for i, w := range won {
			if w {
				winners = append(winners, i)
			}
		}
		if !t.Check(len(winners) == 1, "round %d: %d acquires of one key answered true (%v)", round, len(winners), winners) {
			return
		}
		w := winners[0]
		p := t.MustGet(k)
		t.Equal(fmt.Sprintf("round %d: holder", round), p.Session, ss[w])
		t.Equal(fmt.Sprintf("round %d: value", round), string(p.Value), fmt.Sprint(w))
		t.Require(t.Release(k, ss[w], ""), "release failed")
	}
}

func s49NoHolderDuringDelay(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "2s"})
	const n = 4
	ss := make([]string, n)
	for i := range ss {
		ss[i] = t.CreateUnboundSession(nil)
	}
	t.Require(t.Acquire(k, a, ""), "acquire failed")
	sent := time.Now()
	t.Destroy(a)
	type win struct {
		i  int
		at time.Time
	}
	wins := make(chan win, n)
	var wg sync.WaitGroup
	// Contenders keep trying until 1s after the first win (or 7s in all),
	// so a second holder has every chance to show up.
	var mu sync.Mutex
	deadline := time.Now().Add(2*time.Second + 5*time.Second)
	until := func() time.Time { mu.Lock(); defer mu.Unlock(); return deadline }
	for i := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until()) && t.ctx.Err() == nil {
				r, err := t.env.do(t.ctx, "PUT", "/v1/kv/"+k+"?acquire="+ss[i], nil)
				if err != nil {
					t.Errorf("contender %d: %v", i, err)
					return
				}
				if r.Code == 200 && r.Text() == "true" {
					now := time.Now()
					mu.Lock()
					if d := now.Add(time.Second); d.Before(deadline) {
						deadline = d
					}
					mu.Unlock()
					wins <- win{i, now}
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var all []win
	for w := range wins {
		all = append(all, w)
	}
	if !t.Check(len(all) == 1, "%d contenders acquired the key (want exactly 1)", len(all)) {
		return
	}
	t.Check(!all[0].at.Before(sent.Add(2*time.Second-20*time.Millisecond)),
		"new holder %d appeared %v after the invalidation was sent, inside the 2s lock-delay", all[0].i, all[0].at.Sub(sent))
	t.Equal("holder", t.MustGet(k).Session, ss[all[0].i])
}

func s50StaleHolder(t *caseT) {
	lock, resource := t.Key("lock"), t.Key("resource")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	sa := t.acquireSeq(lock, a, "")
	// a's session ends behind its back (a pause, a partition, a false
	// positive); b takes the lock. a still believes it holds it.
	t.Destroy(a)
	sb := t.acquireSeq(lock, b, "")
	t.Check(sa.li != sb.li, "new holder got the stale holder's LockIndex %d", sa.li)
	// Nothing stops a plain write by the stale holder: belief is not safety.
	t.Set(resource, "written by stale a")
	// A resource that checks the sequencer refuses the stale holder...
	t.txnFails("stale holder's sequencer-checked write", 0,
		fmt.Sprintf("failed session check for key %q, current session %q != %q", lock, b, a),
		txnKV{Verb: "check-session", Key: lock, Session: a},
		txnKV{Verb: "set", Key: resource, Value: []byte("a again")})
	t.Equal("resource after the refused write", string(t.MustGet(resource).Value), "written by stale a")
	// ...and accepts the real one.
	r, _ := t.Txn(txnKV{Verb: "check-session", Key: lock, Session: b},
		txnKV{Verb: "set", Key: resource, Value: []byte("b")})
	t.Check(r.Code == 200, "holder's sequencer-checked write: want 200, got %s", r)
	t.Equal("resource after the holder's write", string(t.MustGet(resource).Value), "b")
}

// s51Semaphore runs consul/api's semaphore recipe with Limit 2 and checks
// that holders never exceed 2, each holding its contender key.
func s51Semaphore(t *caseT) {
	prefix := t.Key("sem")
	mk := func() (*api.Semaphore, string) {
		sid := t.CreateUnboundSession(map[string]any{"Behavior": "delete"})
		sem, err := t.env.api.SemaphoreOpts(&api.SemaphoreOptions{
			Prefix: prefix, Limit: 2, Session: sid,
			SemaphoreTryOnce: true, SemaphoreWaitTime: time.Second,
		})
		t.Require(err == nil, "semaphore: %v", err)
		return sem, sid
	}
	acquire := func(sem *api.Semaphore) bool {
		ch, err := sem.Acquire(nil)
		t.Require(err == nil, "semaphore acquire: %v", err)
		return ch != nil
	}
	holders := func() map[string]bool {
		p := t.MustGet(prefix + "/.lock")
		var v struct {
			Limit   int
			Holders map[string]bool
		}
		t.Require(json.Unmarshal(p.Value, &v) == nil, "semaphore .lock value: %q", p.Value)
		t.Equal("semaphore limit", v.Limit, 2)
		for sid := range v.Holders {
			t.Check(t.heldBy(prefix+"/"+sid, sid), "holder %s does not hold its contender key", sid)
		}
		t.Check(len(v.Holders) <= 2, "semaphore with limit 2 has %d holders", len(v.Holders))
		return v.Holders
	}
	s1, id1 := mk()
	s2, id2 := mk()
	s3, id3 := mk()
	t.Require(acquire(s1), "first contender not admitted")
	t.Require(acquire(s2), "second contender not admitted")
	t.Check(!acquire(s3), "third contender admitted past the limit of 2")
	h := holders()
	t.Check(h[id1] && h[id2] && !h[id3], "holders %v, want %s and %s", h, id1, id2)
	t.Require(s1.Release() == nil, "release of contender 1 failed")
	t.Require(acquire(s3), "third contender not admitted after a release")
	h = holders()
	t.Check(!h[id1] && h[id2] && h[id3], "holders %v, want %s and %s", h, id2, id3)
	// A holder lost by invalidation frees its slot (its contender key goes).
	t.Destroy(id2)
	t.Require(acquire(s1), "contender not admitted after a holder's session was destroyed")
	h = holders()
	t.Check(h[id1] && !h[id2] && h[id3], "holders %v, want %s and %s", h, id1, id3)
	t.Check(s1.Release() == nil && s3.Release() == nil, "final releases failed")
}
