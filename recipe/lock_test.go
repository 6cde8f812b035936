package recipe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// TestLockInteropWithAPILock: our strict lock and api.Lock (what consul lock
// uses) exclude each other on one key and hand over on release.
func TestLockInteropWithAPILock(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	key := uniq("apilock") + "/" + SemaphoreKey
	al, err := c.API.LockOpts(&api.LockOptions{Key: key, SessionTTL: "10s", LockTryOnce: true, LockWaitTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if lost, err := al.Lock(nil); err != nil || lost == nil {
		t.Fatalf("api lock: %v", err)
	}
	ours, err := c.Lock(LockOptions{Key: key, Flags: api.LockFlagValue, StrictFlags: true, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan campaignResult, 1)
	go func() { h, err := ours.Acquire(ctx); res <- campaignResult{h, err} }()
	p, _, err := c.API.KV().Get(key, nil)
	if err != nil || p == nil || p.Flags != api.LockFlagValue {
		t.Fatalf("key while api holds it: %+v, %v", p, err)
	}
	select {
	case r := <-res:
		t.Fatalf("acquired while api.Lock holds the key: %+v", r)
	default:
	}
	if err := al.Unlock(); err != nil {
		t.Fatal(err)
	}
	var r campaignResult
	within(t, 30*time.Second, "our acquire after api's unlock", func() { r = <-res })
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.h.Release(ctx)

	al2, err := c.API.LockOpts(&api.LockOptions{Key: key, SessionTTL: "10s", LockTryOnce: true, LockWaitTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if lost, err := al2.Lock(nil); err != nil || lost != nil {
		t.Fatalf("api lock while ours holds: lost=%v err=%v, want a timeout", lost, err)
	}
	if err := ours.Cleanup(ctx); !errors.Is(err, ErrInUse) {
		t.Errorf("Cleanup while held: %v, want ErrInUse", err)
	}
}

// TestLockRejectsBadOptions: bad input is an error, not a lock.
func TestLockRejectsBadOptions(t *testing.T) {
	c := fakeClient(t, nil)
	for _, o := range []LockOptions{
		{},
		{Key: "/"},
		{Key: "k", Session: SessionOptions{TTL: -time.Second}},
		{Key: "k", RetryMin: time.Second, RetryMax: time.Millisecond},
	} {
		if _, err := c.Lock(o); err == nil {
			t.Errorf("Lock(%+v) accepted", o)
		}
	}
	for _, o := range []SemaphoreOptions{{Limit: 1}, {Prefix: "p"}, {Prefix: "p", Limit: -1}} {
		if _, err := c.Semaphore(o); err == nil {
			t.Errorf("Semaphore(%+v) accepted", o)
		}
	}
	if _, err := c.Election("", LockOptions{}); err == nil {
		t.Error("Election with no service accepted")
	}
}
