package recipe

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// renewHandler answers /v1/session/renew/<id> with answer(n) for the n-th
// renew (from 1); answer returns a status, 299 for a success answered after
// 2s, or 0 to hang until the client gives up (a partition).
func renewHandler(answer func(n int64) int) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/session/renew/") {
			http.Error(w, "unexpected "+r.URL.Path, 400)
			return
		}
		switch code := answer(n.Add(1)); code {
		case 0:
			<-r.Context().Done()
		case 200:
			fmt.Fprint(w, `[{"ID":"s1","TTL":"10s"}]`)
		case 299: // a slow success: the answer takes 2s
			time.Sleep(2 * time.Second)
			fmt.Fprint(w, `[{"ID":"s1","TTL":"10s"}]`)
		default:
			http.Error(w, "down", code)
		}
	}
}

// TestRenewerLoss pins when a session is presumed lost: exactly one TTL after
// the send of the last renew that succeeded, whether renews fail, hang, or
// the session is gone (then at the first renew that says so).
func TestRenewerLoss(t *testing.T) {
	const ttl = 10 * time.Second
	cases := []struct {
		name   string
		answer func(n int64) int
		want   error
		after  time.Duration // loss time from start
	}{
		{"renews hang", func(int64) int { return 0 }, ErrRenewTimeout, ttl},
		{"renews fail", func(int64) int { return 500 }, ErrRenewTimeout, ttl},
		{"session gone", func(int64) int { return 404 }, ErrSessionGone, ttl / 2},
		// Renews at 5s, 10s, 15s succeed; from 20s on they fail, so the
		// last good send is 15s and loss comes at 25s.
		{"good then hang", func(n int64) int {
			if n <= 3 {
				return 200
			}
			return 0
		}, ErrRenewTimeout, 15*time.Second + ttl},
		// Slow successes: sent at 5s, 12s, 19s (each answered 2s later);
		// the server reset its timer no earlier than the send, so loss is
		// 19s+TTL, not 21s+TTL.
		{"slow good then hang", func(n int64) int {
			if n <= 3 {
				return 299
			}
			return 0
		}, ErrRenewTimeout, 19*time.Second + ttl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := fakeClient(t, renewHandler(tc.answer))
				start := time.Now()
				rn := c.startRenewer("s1", ttl, start)
				defer rn.Stop()
				<-rn.lost
				if got := time.Since(start); got != tc.after {
					t.Errorf("lost after %v, want %v", got, tc.after)
				}
				if !errors.Is(rn.err, tc.want) {
					t.Errorf("err = %v, want %v", rn.err, tc.want)
				}
			})
		})
	}
}

// TestRenewerKeepsSessionAlive: renews that succeed never report a loss.
func TestRenewerKeepsSessionAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeClient(t, renewHandler(func(int64) int { return 200 }))
		rn := c.startRenewer("s1", 10*time.Second, time.Now())
		time.Sleep(time.Hour)
		select {
		case <-rn.lost:
			t.Fatalf("lost with working renews: %v", rn.err)
		default:
		}
		rn.Stop()
	})
}
