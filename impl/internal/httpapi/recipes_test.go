package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

type acquired struct {
	lost <-chan struct{}
	err  error
}

func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: channel never closed", what)
	}
}

// The client's own lock recipe against the handler (S49): one holder at a
// time; when the holder's session is destroyed, the holder learns it lost
// the lock and the waiter takes over only after the lock-delay, which the
// manual clock controls. The waiter's refused acquire costs the client's
// fixed 5s retry sleep (api.DefaultLockRetryTime), the bulk of this test.
func TestAPILockRecipe(t *testing.T) {
	f := newFixture(t)
	const key = "svc/leader"
	path := "/v1/kv/" + key
	c1, c2 := f.newClient(), f.newClient()
	l1, err := c1.LockOpts(&api.LockOptions{Key: key, SessionTTL: "10s"})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := c2.LockOpts(&api.LockOptions{Key: key, SessionTTL: "10s"})
	if err != nil {
		t.Fatal(err)
	}
	lost1, err := l1.Lock(nil)
	if err != nil || lost1 == nil {
		t.Fatalf("first contender: %v", err)
	}
	defer func() { _ = l1.Unlock() }()
	holder := f.get(key)
	if holder == nil || holder.Session == "" || holder.Flags != api.LockFlagValue {
		t.Fatalf("lock key after the first Lock: %+v", holder)
	}
	res := make(chan acquired, 1)
	go func() {
		ch, err := l2.Lock(nil)
		res <- acquired{ch, err}
	}()
	// Both the holder's monitor and the waiter park on the key.
	eventually(t, "waiter and monitor parked", func() bool { return f.blocks.count(path) == 2 })
	select {
	case r := <-res:
		t.Fatalf("second contender got the held lock: %+v", r)
	default:
	}
	if _, err := f.client.Session().Destroy(holder.Session, nil); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "first contender's lost channel", lost1)
	// The waiter wakes, is refused by the lock-delay, and sleeps.
	eventually(t, "refused acquire", func() bool { return len(f.b.Store().Refusals()) > 0 })
	if r := f.b.Store().Refusals()[0]; r.Key != key || r.Remaining != 15*time.Second {
		t.Fatalf("refusal %+v, want %s with the full 15s default delay left", r, key)
	}
	select {
	case r := <-res:
		t.Fatalf("second contender got the lock during its lock-delay: %+v", r)
	default:
	}
	f.clock.Advance(15 * time.Second)
	var r acquired
	select {
	case r = <-res:
	case <-time.After(15 * time.Second):
		t.Fatal("second contender never got the lock after the lock-delay")
	}
	if r.err != nil || r.lost == nil {
		t.Fatalf("second contender: %+v", r)
	}
	defer func() { _ = l2.Unlock() }()
	now := f.get(key)
	if now.Session == "" || now.Session == holder.Session || now.LockIndex != holder.LockIndex+1 {
		t.Fatalf("lock key after hand-over: %+v (was %+v)", now, holder)
	}
}

// semaphoreState is the recipe's coordination record (.lock).
type semaphoreState struct {
	Limit   int
	Holders map[string]bool
}

// The client's semaphore recipe with Limit 1 (S51): the second contender
// waits, and takes the slot once the first one's session is destroyed
// (behavior delete removes its contender key).
func TestAPISemaphoreRecipe(t *testing.T) {
	f := newFixture(t)
	const prefix = "svc/sem"
	path := "/v1/kv/" + prefix
	opts := func() *api.SemaphoreOptions {
		return &api.SemaphoreOptions{Prefix: prefix, Limit: 1, SessionTTL: "10s"}
	}
	s1, err := f.newClient().SemaphoreOpts(opts())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := f.newClient().SemaphoreOpts(opts())
	if err != nil {
		t.Fatal(err)
	}
	lost1, err := s1.Acquire(nil)
	if err != nil || lost1 == nil {
		t.Fatalf("first contender: %v", err)
	}
	defer func() { _ = s1.Release() }()
	holders := func() map[string]bool {
		t.Helper()
		p := f.get(prefix + "/.lock")
		if p == nil {
			return nil
		}
		var st semaphoreState
		if err := json.Unmarshal(p.Value, &st); err != nil || st.Limit != 1 {
			t.Fatalf(".lock value %q: %v", p.Value, err)
		}
		return st.Holders
	}
	first := holders()
	if len(first) != 1 {
		t.Fatalf("holders after the first Acquire: %v", first)
	}
	res := make(chan acquired, 1)
	go func() {
		ch, err := s2.Acquire(nil)
		res <- acquired{ch, err}
	}()
	eventually(t, "waiter and monitor parked", func() bool { return f.blocks.count(path) >= 2 })
	select {
	case r := <-res:
		t.Fatalf("second contender entered a full semaphore: %+v", r)
	default:
	}
	var sid1 string
	for id := range first {
		sid1 = id
	}
	if _, err := f.client.Session().Destroy(sid1, nil); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "first contender's lost channel", lost1)
	var r acquired
	select {
	case r = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("second contender never entered the freed semaphore")
	}
	if r.err != nil || r.lost == nil {
		t.Fatalf("second contender: %+v", r)
	}
	defer func() { _ = s2.Release() }()
	second := holders()
	if len(second) != 1 || second[sid1] {
		t.Fatalf("holders after hand-over: %v (first was %s)", second, sid1)
	}
	if p := f.get(prefix + "/" + sid1); p != nil {
		t.Fatalf("dead contender's key survived its delete-behaviour session: %+v", p)
	}
}
