package conformance

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hashicorp/consul/api"
)

// TTL: S14, S18-S21. TTLs are 10s, the smallest any server must accept.

const (
	ttl = 10 * time.Second
	// ttlSlack is how long past TTL x 2 a TTL session may linger before the
	// suite calls it never expired (the contract only promises the lower
	// bound; servers default to a multiplier of 2).
	ttlSlack = 10 * time.Second
)

func ttlCases() []Case {
	return []Case{
		{clause: "S14", name: "ttl-expiry-releases-deletes-and-arms-lock-delay", slow: true, run: s14TTLExpiry},
		{clause: "S18", name: "renew-resets-and-ttl-is-a-lower-bound", slow: true, run: s18RenewResets},
		{clause: "S19", name: "expiry-about-2x-ttl-after-renew", slow: true, run: s19TwiceTTL},
		{clause: "S20", name: "renew-live-answers-session", run: s20RenewLive},
		{clause: "S20", name: "renew-unknown-or-destroyed-404", run: s20Renew404},
		{clause: "S21", name: "new-leader-rearms-ttl",
			unobservable: "needs a leader change, which a client of one server cannot cause"},
	}
}

// renew renews sid and returns the send time; the answer must be 200.
func (t *caseT) renew(sid string) time.Time {
	sent := time.Now()
	r := t.Do(http.MethodPut, "/v1/session/renew/"+sid, nil)
	t.Require(r.Code == 200, "renew of live session %s: want 200, got %s", sid, r)
	return sent
}

// waitGone polls until sid no longer exists and returns when that was seen.
func (t *caseT) waitGone(sid string, timeout time.Duration) time.Time {
	return t.WaitFor("session "+sid+" to expire", timeout, 200*time.Millisecond, func() bool { return !t.Alive(sid) })
}

func s14TTLExpiry(t *caseT) {
	kr, kd := t.Key("released"), t.Key("deleted")
	r := t.CreateUnboundSession(map[string]any{"TTL": "10s", "LockDelay": "3s"})
	d := t.CreateUnboundSession(map[string]any{"TTL": "10s", "Behavior": "delete"})
	other := t.CreateUnboundSession(nil)
	t.Require(t.PutBool(kr, "kept", "acquire="+r+"&flags=7"), "acquire failed")
	t.Require(t.Acquire(kd, d, "doomed"), "acquire failed")
	before := t.MustGet(kr)

	// Wake on the release of kr through a blocking read (S46), so the
	// lock-delay check below happens well inside the 3s delay.
	deadline := time.Now().Add(2*ttl + ttlSlack)
	var p *api.KVPair
	for {
		p, _ = t.getWith(kr, "index="+u64(before.ModifyIndex)+"&wait=5s")
		if p == nil || p.Session == "" {
			break
		}
		t.Require(time.Now().Before(deadline), "TTL session still holds its key %v after creation", 2*ttl+ttlSlack)
	}
	gone := time.Now()
	t.Require(p != nil, "released key of the expired release-behavior session was deleted")
	t.Check(!t.Alive(r), "key released but the expired session still exists")
	t.Equal("Value after expiry", string(p.Value), "kept")
	t.Equal("Flags after expiry", p.Flags, uint64(7))
	t.Equal("LockIndex after expiry", p.LockIndex, before.LockIndex)
	t.Equal("CreateIndex after expiry", p.CreateIndex, before.CreateIndex)
	t.Check(!t.Acquire(kr, other, ""), "acquire right after TTL expiry succeeded: expiry did not arm lock-delay")
	ok := t.WaitFor("acquire after the 3s lock-delay", 3*time.Second+5*time.Second, 200*time.Millisecond,
		func() bool { return t.Acquire(kr, other, "") })
	t.Logf("lock-delay after expiry lifted %v after the release was seen", ok.Sub(gone))

	t.waitGone(d, time.Until(deadline)+time.Second)
	pd, _ := t.Get(kd)
	t.Check(pd == nil, "key of the expired delete-behavior session still exists (Session %q)", sessionOf(pd))
}

func s18RenewResets(t *caseT) {
	created := time.Now()
	sid := t.CreateUnboundSession(map[string]any{"TTL": "10s"})
	// Renew twice, each time well within TTL of the previous reset, then
	// check the session is alive 2*TTL+ after creation: only resets explain it.
	t.SleepUntil(created.Add(7 * time.Second))
	t.renew(sid)
	t.SleepUntil(created.Add(14 * time.Second))
	last := t.renew(sid)
	t.SleepUntil(last.Add(ttl - time.Second))
	t.Check(t.Alive(sid), "session gone %v after its last renew (TTL 10s is a lower bound), %v after create",
		time.Since(last).Round(time.Millisecond), time.Since(created).Round(time.Millisecond))
	gone := t.waitGone(sid, time.Until(last.Add(2*ttl+ttlSlack)))
	t.Check(gone.Sub(last) >= ttl, "session expired %v after its last renew, before its TTL", gone.Sub(last))
	t.Logf("expired %v after the last renew", gone.Sub(last).Round(100*time.Millisecond))
}

func s19TwiceTTL(t *caseT) {
	sid := t.CreateUnboundSession(map[string]any{"TTL": "10s"})
	t.Sleep(3 * time.Second)
	last := t.renew(sid)
	t.SleepUntil(last.Add(2*ttl - 1500*time.Millisecond))
	t.Check(t.Alive(sid), "session expired before 2 x TTL after its last renew")
	gone := t.waitGone(sid, time.Until(last.Add(2*ttl+5*time.Second)))
	t.Check(gone.Sub(last) <= 2*ttl+5*time.Second, "expiry %v after renew is not about 2 x TTL", gone.Sub(last))
}

func s20RenewLive(t *caseT) {
	for _, ttlv := range []string{"10s", ""} {
		sid := t.CreateUnboundSession(map[string]any{"TTL": ttlv})
		r := t.Do(http.MethodPut, "/v1/session/renew/"+sid, nil)
		t.Require(r.Code == 200, "renew TTL %q: want 200, got %s", ttlv, r)
		var out []*api.SessionEntry
		t.decode("renew", r, &out)
		if t.Check(len(out) == 1, "renew: want [session], got %s", r) {
			t.Equal("renewed ID", out[0].ID, sid)
			t.Equal("renewed TTL", out[0].TTL, ttlv)
		}
		var raw []map[string]json.RawMessage
		t.decode("renew", r, &raw)
		if len(raw) == 1 {
			for _, f := range []string{"ID", "Node", "LockDelay", "Behavior", "TTL", "CreateIndex", "ModifyIndex"} {
				_, ok := raw[0][f]
				t.Check(ok, "renew answer lacks session field %s", f)
			}
		}
	}
}

func s20Renew404(t *caseT) {
	gone := t.CreateUnboundSession(map[string]any{"TTL": "10s"})
	t.Destroy(gone)
	for _, id := range []string{fakeID(), gone} {
		r := t.Do(http.MethodPut, "/v1/session/renew/"+id, nil)
		want := "Session id '" + id + "' not found"
		t.Check(r.Code == 404 && r.Text() == want, "renew of unknown %s: want 404 %q, got %s", id, want, r)
	}
}
