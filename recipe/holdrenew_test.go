package recipe

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHoldEndsWhenItsSessionIsLost covers the hold-loss path the watcher
// cannot see: the key still names the hold's session, but renews say the
// session is gone, or fail for a whole TTL (S14, S18). Only the renewer
// knows, and the hold must end with its reason.
func TestHoldEndsWhenItsSessionIsLost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   error
	}{
		{"session gone", http.StatusNotFound, ErrSessionGone},
		{"renews fail", http.StatusInternalServerError, ErrRenewTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := &oneKey{index: 3}
				var failing atomic.Bool
				c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
					if failing.Load() && strings.HasPrefix(r.URL.Path, "/v1/session/renew/") {
						http.Error(w, "scripted renew failure", tc.status)
						return
					}
					k.handle(w, r)
				})
				l, err := c.Lock(LockOptions{Key: "k"})
				if err != nil {
					t.Fatal(err)
				}
				h, err := l.Acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				failing.Store(true)
				time.Sleep(time.Minute) // several TTLs
				select {
				case <-h.Lost():
				default:
					t.Fatal("the hold outlived its session")
				}
				if !errors.Is(h.Err(), tc.want) {
					t.Fatalf("hold ended with %v, want %v", h.Err(), tc.want)
				}
				k.mu.Lock()
				holder := k.session
				k.mu.Unlock()
				if holder != "s1" {
					t.Fatalf("the key's holder changed to %q: the watcher, not the renewer, could have seen it", holder)
				}
			})
		})
	}
}

// TestHoldEndsWhenItsKeyIsRecreated is the Consul form of "deleted and
// taken again by its session": Consul may restart LockIndex for a new
// incarnation of a key (S34), so the same session at the same LockIndex
// can hold a newer key. Its CreateIndex, above the ModifyIndex seen at the
// acquire, still gives the hold away.
func TestHoldEndsWhenItsKeyIsRecreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{index: 3}
		h, _, _, err := tryAcquireAt(t, k, LockOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Release stops the renewer, which the bubble must see end.
		defer func() { _ = h.Release(context.Background()) }()
		// The watcher's blocking read lasts DefaultWaitTime (1 min) on the
		// fake; the key changes half-way through one read and is checked
		// half-way through the next, never at the instant a read returns,
		// whose order against this goroutine the bubble does not fix.
		time.Sleep(DefaultWaitTime / 2)
		select {
		case <-h.Lost():
			t.Fatalf("hold lost before the key changed: %v", h.Err())
		default:
		}
		k.mu.Lock()
		k.index++
		k.createIndex = k.index
		k.mu.Unlock()
		time.Sleep(DefaultWaitTime)
		select {
		case <-h.Lost():
		default:
			t.Fatal("the hold outlived its key's incarnation")
		}
		if err := h.Err(); !errors.Is(err, ErrHolderChanged) || !strings.Contains(err.Error(), "deleted and taken again") {
			t.Fatalf("hold ended with %v; want ErrHolderChanged saying the key was deleted and taken again", err)
		}
	})
}
