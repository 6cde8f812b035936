package leader

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/model"
)

type expiryLog struct {
	mu  sync.Mutex
	ids []string
	ch  chan struct{}
}

func newExpiryLog() *expiryLog { return &expiryLog{ch: make(chan struct{}, 100)} }

func (l *expiryLog) expire(ids []string) {
	l.mu.Lock()
	l.ids = append(l.ids, ids...)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

// waitFire waits for the timer goroutine the fake clock started.
func (l *expiryLog) waitFire(t *testing.T) []string {
	t.Helper()
	select {
	case <-l.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no expiry")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

func (l *expiryLog) none(t *testing.T) {
	t.Helper()
	// Timer callbacks run in goroutines the fake clock starts at Advance;
	// give them a moment to show up if they wrongly exist.
	select {
	case <-l.ch:
		t.Fatalf("unexpected expiry: %v", l.ids)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestTTLTimersExpireAtMultipliedTTL(t *testing.T) {
	clock := clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	log := newExpiryLog()
	tt := newTTLTimers(clock, 2, log.expire)
	live := func(string) bool { return true }
	tt.start(func() []model.Session {
		return []model.Session{{ID: "a", TTL: "10s"}, {ID: "none", TTL: ""}, {ID: "zero", TTL: "0s"}}
	})
	tt.reset("b", 15*time.Second, live)
	if _, ok := tt.deadline("none"); ok {
		t.Fatal("session without TTL got a deadline")
	}
	clock.Advance(20*time.Second - time.Nanosecond)
	log.none(t)
	clock.Advance(time.Nanosecond)
	if got := log.waitFire(t); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("expired %v, want [a]", got)
	}
	// A renew of b at 20s pushes its deadline from 30s to 50s.
	tt.reset("b", 15*time.Second, live)
	clock.Advance(29 * time.Second)
	log.none(t)
	clock.Advance(time.Second)
	if got := log.waitFire(t); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("expired %v, want [a b]", got)
	}
	if clock.Pending() != 0 {
		t.Fatalf("%d timers armed with an empty book", clock.Pending())
	}
}

func TestTTLTimersStopRemoveAndLiveness(t *testing.T) {
	clock := clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	log := newExpiryLog()
	tt := newTTLTimers(clock, 1, log.expire)
	tt.reset("before-start", 10*time.Second, func(string) bool { return true })
	if _, ok := tt.deadline("before-start"); ok {
		t.Fatal("a follower (inactive book) armed a deadline")
	}
	tt.start(func() []model.Session { return nil })
	tt.reset("dead", 10*time.Second, func(string) bool { return false })
	if _, ok := tt.deadline("dead"); ok {
		t.Fatal("armed a deadline for a session that is already gone")
	}
	tt.reset("no-ttl", 0, func(string) bool { return true })
	if _, ok := tt.deadline("no-ttl"); ok {
		t.Fatal("a session without a TTL got a deadline")
	}
	tt.reset("only", 10*time.Second, func(string) bool { return true })
	tt.remove([]string{"only"})
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers armed for an empty book, want none", n)
	}
	tt.reset("a", 10*time.Second, func(string) bool { return true })
	tt.reset("b", 10*time.Second, func(string) bool { return true })
	tt.remove([]string{"a"})
	tt.stop()
	clock.Advance(time.Minute)
	log.none(t)
	tt.start(func() []model.Session { return []model.Session{{ID: "b", TTL: "10s"}} })
	clock.Advance(10 * time.Second)
	if got := log.waitFire(t); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("expired %v, want only [b] (a was removed, the stop dropped the rest)", got)
	}
}
