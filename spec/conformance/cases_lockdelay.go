package conformance

import (
	"fmt"
	"time"
)

// Lock-delay: S22-S25. Delays are 2-5s so the cases stay short.

const lockDelay = 2 * time.Second

func lockDelayCases() []Case {
	return []Case{
		{clause: "S22", name: "destroy-release-behavior-arms", run: func(t *caseT) { s22Destroy(t, "release") }},
		{clause: "S22", name: "destroy-delete-behavior-arms", run: func(t *caseT) { s22Destroy(t, "delete") }},
		{clause: "S22", name: "check-critical-arms", run: func(t *caseT) { s22Catalog(t, "critical") }},
		{clause: "S22", name: "check-deregistration-arms", run: func(t *caseT) { s22Catalog(t, "check") }},
		{clause: "S22", name: "node-deregistration-arms", run: func(t *caseT) { s22Catalog(t, "node") }},
		{clause: "S23", name: "release-does-not-arm", run: s23Release},
		{clause: "S23", name: "delete-does-not-arm", run: s23Delete},
		{clause: "S23", name: "set-and-cas-do-not-arm", run: s23SetCAS},
		{clause: "S24", name: "only-acquire-is-blocked", run: s24OnlyAcquire},
		{clause: "S25", name: "refusal-names-remaining-delay", run: s25Header},
	}
}

// expectArmed checks lock-delay ld on keys, armed by a trigger sent at sent
// and answered at done: acquire (plain and txn) by another session fails at
// once, and the first key becomes acquirable no earlier than sent+ld and
// soon after done+ld.
func (t *caseT) expectArmed(keys []string, sent, done time.Time, ld time.Duration) {
	other := t.CreateUnboundSession(nil)
	for _, k := range keys {
		before, _ := t.Get(k)
		t.Check(!t.Acquire(k, other, "x"), "acquire of %s right after invalidation succeeded: lock-delay not armed", k)
		r, _ := t.Txn(txnKV{Verb: "lock", Key: k, Session: other, Value: []byte("x")})
		t.Check(r.Code == 409, "txn lock of %s right after invalidation: want 409, got %s", k, r)
		t.Unchanged("refused acquires", k, before)
	}
	if time.Since(sent) > ld/2 {
		t.Logf("checks took %v, lock-delay %v: refusals above may be late", time.Since(sent), ld)
	}
	got := t.WaitFor("acquire after lock-delay", time.Until(done.Add(ld+4*time.Second)), 100*time.Millisecond,
		func() bool { return t.Acquire(keys[0], other, "") })
	// The server arms the delay when it applies the invalidation, which is
	// after sent; a success before sent+ld (less clock-rate tolerance) is early.
	t.Check(got.After(sent.Add(ld-20*time.Millisecond)),
		"acquire succeeded %v after the invalidation was sent; lock-delay is %v", got.Sub(sent), ld)
}

func s22Destroy(t *caseT, behavior string) {
	k1, k2 := t.Key("k1"), t.Key("k2")
	a := t.holding(t.HomeNode(), nil, map[string]any{"LockDelay": "2s", "Behavior": behavior}, k1, k2)
	sent := time.Now()
	t.Destroy(a)
	done := time.Now()
	t.expectArmed([]string{k1, k2}, sent, done, lockDelay)
}

func s22Catalog(t *caseT, trigger string) {
	n := t.RegisterNode("n", checkSpec{"c", "passing"})
	k1, k2 := t.Key("k1"), t.Key("k2")
	t.holding(n, []string{"c"}, map[string]any{"LockDelay": "2s"}, k1, k2)
	sent := time.Now()
	switch trigger {
	case "critical":
		t.SetCheck(n, "c", "critical")
	case "check":
		t.DeregisterCheck(n, "c")
	case "node":
		t.DeregisterNode(n)
	}
	done := time.Now()
	t.expectArmed([]string{k1, k2}, sent, done, lockDelay)
}

func s23Release(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "10s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	t.Require(t.Release(k, a, "v"), "release by the holder failed")
	t.Check(t.Acquire(k, b, "w"), "acquire right after an explicit release refused: release armed lock-delay")
}

func s23Delete(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "10s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	t.Require(t.Delete(k, ""), "delete answered false")
	t.Check(t.Acquire(k, b, "w"), "acquire right after deleting a held key refused: delete armed lock-delay")
	t.Check(t.Alive(a), "deleting a held key invalidated the holder")
}

func s23SetCAS(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "10s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	t.Set(k, "set")
	t.Require(t.CAS(k, "cas", t.MustGet(k).ModifyIndex), "cas with the current index failed")
	t.Require(t.Release(k, a, ""), "release by the holder after set/cas failed")
	t.Check(t.Acquire(k, b, "w"), "acquire after set, cas and release refused: lock-delay armed")
}

func s24OnlyAcquire(t *caseT) {
	k, free := t.Key("k"), t.Key("free")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "5s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	sent := time.Now()
	t.Destroy(a)
	t.Check(!t.Acquire(k, b, ""), "acquire during lock-delay succeeded")
	t.Check(t.Acquire(free, b, ""), "acquire of an unrelated key refused: lock-delay is per key")
	t.Set(k, "set during delay")
	t.Check(t.CAS(k, "cas during delay", t.MustGet(k).ModifyIndex), "cas during lock-delay refused")
	t.Check(!t.Release(k, b, "x"), "release of an unlocked key during lock-delay answered true")
	t.Check(!t.Acquire(k, b, ""), "acquire during lock-delay succeeded after set/cas")
	t.Check(t.Delete(k, ""), "delete during lock-delay refused")
	p, _ := t.Get(k)
	t.Check(p == nil, "key survived delete during lock-delay")
	t.Check(!t.Acquire(k, b, ""), "acquire of the deleted key during lock-delay succeeded")
	r, _ := t.Txn(txnKV{Verb: "lock", Key: k, Session: b})
	t.Check(r.Code == 409, "txn lock during lock-delay: want 409, got %s", r)
	if time.Since(sent) > 4*time.Second {
		t.Logf("checks took %v of the 5s delay", time.Since(sent))
	}
	t.WaitFor("acquire after lock-delay", time.Until(sent.Add(5*time.Second+5*time.Second)), 200*time.Millisecond,
		func() bool { return t.Acquire(k, b, "") })
}

func s25Header(t *caseT) {
	k, held := t.Key("k"), t.Key("held")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "5s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	t.Require(t.Acquire(held, b, "v"), "acquire failed")
	t.Destroy(a)
	r := t.PutRaw(k, "", "acquire="+b)
	t.Check(r.Code == 200 && r.Text() == "false", "acquire during lock-delay: want 200 false, got %s", r)
	h := r.Header.Get("X-Tenure-Lock-Delay")
	d, err := time.ParseDuration(h)
	t.Check(err == nil && d > 0 && d <= 5*time.Second,
		"X-Tenure-Lock-Delay: want a duration in (0, 5s], got %q (%v)", h, err)
	rt, ans := t.Txn(txnKV{Verb: "lock", Key: k, Session: b})
	want := fmt.Sprintf("failed to lock key %q due to lock delay", k)
	t.Check(rt.Code == 409 && len(ans.Errors) == 1 && ans.Errors[0].What == want && ans.Errors[0].OpIndex == 0,
		"txn lock during lock-delay: want 409 [{0 %q}], got %s", want, rt)
	// A refusal because another session holds the key is not lock-delay.
	c := t.CreateUnboundSession(nil)
	r = t.PutRaw(held, "", "acquire="+c)
	t.Check(r.Code == 200 && r.Text() == "false", "acquire of a held key: want 200 false, got %s", r)
	t.Check(r.Header.Get("X-Tenure-Lock-Delay") == "", "refusal for a held key carries X-Tenure-Lock-Delay %q",
		r.Header.Get("X-Tenure-Lock-Delay"))
}
