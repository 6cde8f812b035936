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

// TestLockFlagsCheck: StrictFlags refuses only a key that exists with other
// flags; a key that does not exist yet is taken, and a lock without
// StrictFlags takes a free key whatever its flags (as the election guide's
// plain acquire does).
func TestLockFlagsCheck(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	foreign := uniq("flags")
	if _, err := c.API.KV().Put(&api.KVPair{Key: foreign, Flags: 7}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		o      LockOptions
		refuse bool
	}{
		{"strict on a new key", LockOptions{Key: uniq("flags"), Flags: api.LockFlagValue, StrictFlags: true}, false},
		{"loose on foreign flags", LockOptions{Key: foreign}, false},
		{"strict on foreign flags", LockOptions{Key: foreign, Flags: api.LockFlagValue, StrictFlags: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Session = shortSession()
			l, err := c.Lock(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			h, err := l.Acquire(ctx)
			if tc.refuse {
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("Acquire = %v, want ErrConflict", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sessionsNamed lists the sessions called name on the server.
func sessionsNamed(t *testing.T, c *Client, name string) []string {
	t.Helper()
	all, _, err := c.API.Session().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		if s.Name == name {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// TestLockFailedAcquireCleansUp: an Acquire that fails destroys the
// session it created (even when the caller's ctx is what ended it), and
// leaves a session the caller passed in alone.
func TestLockFailedAcquireCleansUp(t *testing.T) {
	c := testClient(t, nil)
	key := uniq("cleanup")
	if _, err := c.API.KV().Put(&api.KVPair{Key: key, Flags: 7}, nil); err != nil {
		t.Fatal(err)
	}
	name := uniq("session")
	o := shortSession()
	o.Name = name
	l, err := c.Lock(LockOptions{Key: key, StrictFlags: true, Session: o})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrConflict) {
		t.Fatalf("Acquire = %v, want ErrConflict", err)
	}
	if ids := sessionsNamed(t, c, name); len(ids) != 0 {
		t.Errorf("failed Acquire left its sessions %v", ids)
	}

	o.Name = uniq("given")
	given := testSession(t, c, o)
	l, err = c.Lock(LockOptions{Key: key, StrictFlags: true, SessionID: given})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrConflict) {
		t.Fatalf("Acquire = %v, want ErrConflict", err)
	}
	if ids := sessionsNamed(t, c, o.Name); len(ids) != 1 || ids[0] != given {
		t.Errorf("caller's session %s: sessions now %v", given, ids)
	}
}

// TestLockCleanup: Cleanup deletes a free key, accepts a missing one, and
// refuses a held key or (with StrictFlags) foreign flags.
func TestLockCleanup(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	l, err := c.Lock(LockOptions{Key: uniq("cleanup"), Flags: api.LockFlagValue, StrictFlags: true, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cleanup(ctx); err != nil {
		t.Errorf("Cleanup of a missing key: %v", err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cleanup(ctx); !errors.Is(err, ErrInUse) {
		t.Errorf("Cleanup while held: %v, want ErrInUse", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Cleanup(ctx); err != nil {
		t.Errorf("Cleanup of a free key: %v", err)
	}
	if p, _, err := c.API.KV().Get(l.o.Key, nil); err != nil || p != nil {
		t.Errorf("after Cleanup: %+v, %v; want no key", p, err)
	}
	if _, err := c.API.KV().Put(&api.KVPair{Key: l.o.Key, Flags: 7}, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Cleanup(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("Cleanup of a key with foreign flags: %v, want ErrConflict", err)
	}
}
