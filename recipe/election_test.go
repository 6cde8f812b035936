package recipe

import (
	"context"
	"errors"
	"testing"
	"time"
)

type campaignResult struct {
	h   *Hold
	err error
}

// TestElectionTakeoverAfterLockDelay: two candidates, one leader; when the
// leader's session is destroyed its Lost closes and the other takes over,
// after the lock-delay. Against tenure the refusal names the delay and the
// follower sleeps exactly that (S25); against Consul it backs off.
func TestElectionTakeoverAfterLockDelay(t *testing.T) {
	admin := testClient(t, nil)
	tenure := isTenure(t, admin)
	service := uniq("election")
	ctx := context.Background()

	ca := testClient(t, nil)
	ea, err := ca.Election(service, LockOptions{Value: []byte("a"), Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	var ha *Hold
	within(t, 30*time.Second, "first campaign", func() { ha, err = ea.Campaign(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Release(ctx)

	clock := &recordingClock{}
	cb := testClient(t, clock)
	refusals := make(chan Refusal, 64)
	eb, err := cb.Election(service, LockOptions{Value: []byte("b"), Session: shortSession(),
		OnRefused: func(r Refusal) { refusals <- r }})
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan campaignResult, 1)
	go func() { h, err := eb.Campaign(bctx); res <- campaignResult{h, err} }()

	// Only one leader: the key names a's session and b has not returned.
	l, ok, _, err := eb.Leader(ctx, 0)
	if err != nil || !ok || l.Sequencer.Session != ha.Sequencer().Session || string(l.Value) != "a" {
		t.Fatalf("leader = %+v, %v, %v; want a's session %s", l, ok, err, ha.Sequencer().Session)
	}
	select {
	case r := <-res:
		t.Fatalf("second candidate elected while the first leads: %+v", r)
	default:
	}

	if _, err := admin.API.Session().Destroy(ha.Sequencer().Session, nil); err != nil {
		t.Fatal(err)
	}
	within(t, 15*time.Second, "old leader's Lost", func() { <-ha.Lost() })
	if !errors.Is(ha.Err(), ErrHolderChanged) && !errors.Is(ha.Err(), ErrSessionGone) {
		t.Errorf("old leader lost with %v", ha.Err())
	}

	var r campaignResult
	within(t, 30*time.Second, "takeover", func() { r = <-res })
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.h.Release(ctx)
	sa, sb := ha.Sequencer(), r.h.Sequencer()
	if sb.Session == sa.Session || sb.LockIndex <= sa.LockIndex || sb.Key != sa.Key {
		t.Errorf("new leader %v after %v", sb, sa)
	}

	close(refusals)
	var seen []Refusal
	for x := range refusals {
		seen = append(seen, x)
	}
	t.Logf("tenure=%v refusals=%+v", tenure, seen)
	if tenure {
		// The session's lock-delay was 1s: the header must name at most
		// that, and the follower must have slept exactly what it named.
		if len(seen) == 0 {
			t.Fatal("no lock-delay refusal seen: the takeover skipped the lock-delay")
		}
		for _, x := range seen {
			if !x.FromHeader || x.Remaining <= 0 || x.Remaining > time.Second || x.Wait != x.Remaining {
				t.Errorf("refusal %+v: want header delay in (0, 1s] and an equal wait", x)
			}
			if !clock.waited(x.Remaining) {
				t.Errorf("no sleep of exactly %v recorded", x.Remaining)
			}
		}
	}
	for _, x := range seen {
		if !tenure && x.FromHeader {
			t.Errorf("Consul sent a lock-delay header: %+v", x)
		}
	}
}

// TestElectionResignHandsOverWithoutDelay: a leader that resigns releases
// the key, which arms no lock-delay (S23), so the follower takes over at once:
// no refusal at all.
func TestElectionResignHandsOverWithoutDelay(t *testing.T) {
	c := testClient(t, nil)
	service := uniq("resign")
	ctx := context.Background()
	o := LockOptions{Session: SessionOptions{TTL: 10 * time.Second, LockDelay: 5 * time.Second, Checks: noTTLChecks}}
	ea, err := c.Election(service, o)
	if err != nil {
		t.Fatal(err)
	}
	ha, err := ea.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	o.OnRefused = func(Refusal) { refused++ }
	eb, err := c.Election(service, o)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan campaignResult, 1)
	go func() { h, err := eb.Campaign(ctx); res <- campaignResult{h, err} }()
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(ha.Err(), ErrReleased) {
		t.Errorf("resigned leader's Err = %v", ha.Err())
	}
	var r campaignResult
	within(t, 30*time.Second, "handover", func() { r = <-res })
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.h.Release(ctx)
	if refused != 0 {
		t.Errorf("%d refusals after a voluntary release", refused)
	}
}

// TestElectionLeaderWhenNobodyLeads: before the first campaign (no key) and
// after the leader resigns (key left without a session) Leader reports
// nobody; while a candidate leads it reports that candidate's sequencer.
func TestElectionLeaderWhenNobodyLeads(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	e, err := c.Election(uniq("leaderless"), LockOptions{Value: []byte("me"), Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok, _, err := e.Leader(ctx, 0); err != nil || ok {
		t.Fatalf("Leader before any campaign = %+v, %v, %v; want nobody", l, ok, err)
	}
	h, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok, _, err := e.Leader(ctx, 0); err != nil || !ok || l.Sequencer != h.Sequencer() || string(l.Value) != "me" {
		t.Fatalf("Leader while leading = %+v, %v, %v; want %v", l, ok, err, h.Sequencer())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l, ok, _, err := e.Leader(ctx, 0); err != nil || ok {
		t.Fatalf("Leader after resigning = %+v, %v, %v; want nobody", l, ok, err)
	}
}
