package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
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

// TestCreateSessionBody pins what a session create sends: only the fields
// the options set, LockDelay "0s" for NoLockDelay but none for 0 (the
// server's 15s default), Checks only when non-nil (an empty list binds the
// session to its TTL alone, S7), and the recipe's Behavior unless given.
func TestCreateSessionBody(t *testing.T) {
	cases := []struct {
		name string
		o    SessionOptions
		want string
	}{
		{"defaults", SessionOptions{}, `{"Behavior":"release","TTL":"15s"}`},
		{"no lock-delay, TTL only", SessionOptions{Name: "n", Node: "x", TTL: 10 * time.Second, LockDelay: NoLockDelay, Checks: []string{}, Behavior: "delete"},
			`{"Behavior":"delete","Checks":[],"LockDelay":"0s","Name":"n","Node":"x","TTL":"10s"}`},
		{"lock-delay and checks", SessionOptions{TTL: time.Minute, LockDelay: 3 * time.Second, Checks: []string{"serfHealth", "c"}},
			`{"Behavior":"release","Checks":["serfHealth","c"],"LockDelay":"3s","TTL":"1m0s"}`},
		{"shortest lock-delay", SessionOptions{LockDelay: time.Nanosecond}, `{"Behavior":"release","LockDelay":"1ns","TTL":"15s"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
				var body map[string]any
				if r.URL.Path != "/v1/session/create" || json.NewDecoder(r.Body).Decode(&body) != nil {
					http.Error(w, "unexpected "+r.URL.Path, 400)
					return
				}
				b, _ := json.Marshal(body) // map keys come out sorted
				got = append(got, string(b))
				fmt.Fprint(w, `{"ID":"s1"}`)
			})
			id, err := c.createSession(context.Background(), tc.o, "release")
			if err != nil || id != "s1" {
				t.Fatalf("createSession = %q, %v", id, err)
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("sent %v, want %s", got, tc.want)
			}
		})
	}
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("negative TTL sent %s", r.URL.Path)
	})
	if _, err := c.createSession(context.Background(), SessionOptions{TTL: -time.Second}, "release"); err == nil {
		t.Error("negative TTL accepted")
	}
}

// renewAnswering answers the n-th renew (from 1) with success and TTL
// ttls[n-1], or with a 500 when that is ""; renews beyond the list hang
// (a partition). sent records when each renew arrived, since start.
func renewAnswering(start time.Time, sent *[]time.Duration, ttls ...string) http.HandlerFunc {
	var mu sync.Mutex
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/session/renew/") {
			http.Error(w, "unexpected "+r.URL.Path, 400)
			return
		}
		mu.Lock()
		*sent = append(*sent, time.Since(start))
		n := len(*sent)
		mu.Unlock()
		switch {
		case n > len(ttls):
			<-r.Context().Done()
		case ttls[n-1] == "":
			http.Error(w, "down", 500)
		default:
			fmt.Fprintf(w, `[{"ID":"s1","TTL":%q}]`, ttls[n-1])
		}
	}
}

// TestRenewerHonoursServerTTL: a renew answer naming a different positive
// TTL replaces the session's (the server's timer runs on it, as api also
// assumes); one naming no usable TTL changes nothing.
func TestRenewerHonoursServerTTL(t *testing.T) {
	const ttl = 10 * time.Second
	cases := []struct {
		name   string
		answer string
		sent   []time.Duration // renew sends up to the loss
		after  time.Duration   // loss time from start
	}{
		// Renew at 5s answers 20s: next renew at 5s+10s, loss at 5s+20s.
		{"longer", "20s", []time.Duration{5 * time.Second, 15 * time.Second}, 25 * time.Second},
		// Answers without a positive TTL keep 10s: next renew at 10s, loss at 15s.
		{"zero", "0s", []time.Duration{5 * time.Second, 10 * time.Second}, 15 * time.Second},
		{"negative", "-4s", []time.Duration{5 * time.Second, 10 * time.Second}, 15 * time.Second},
		{"garbage", "soon", []time.Duration{5 * time.Second, 10 * time.Second}, 15 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var sent []time.Duration
				c := fakeClient(t, renewAnswering(start, &sent, tc.answer))
				rn := c.startRenewer("s1", ttl, start)
				defer rn.Stop()
				<-rn.lost
				if got := time.Since(start); got != tc.after || !errors.Is(rn.err, ErrRenewTimeout) {
					t.Errorf("lost after %v with %v, want %v and ErrRenewTimeout", got, rn.err, tc.after)
				}
				if fmt.Sprint(sent) != fmt.Sprint(tc.sent) {
					t.Errorf("renews sent at %v, want %v", sent, tc.sent)
				}
			})
		})
	}
}

// TestRenewerRetryPause: after a failed renew the next one follows after a
// tenth of the TTL, at most 1s: with a 5s TTL every 500ms.
func TestRenewerRetryPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var sent []time.Duration
		c := fakeClient(t, renewAnswering(start, &sent, "", "", "5s"))
		rn := c.startRenewer("s1", 5*time.Second, start)
		// The third renew (at 3.5s) succeeds; the fourth is due at 6s.
		time.Sleep(5 * time.Second)
		rn.Stop()
		want := []time.Duration{2500 * time.Millisecond, 3 * time.Second, 3500 * time.Millisecond}
		if fmt.Sprint(sent) != fmt.Sprint(want) {
			t.Errorf("renews sent at %v, want %v", sent, want)
		}
		if err := rn.lostErr(); err != nil {
			t.Errorf("lost: %v", err)
		}
	})
}

// stoppedClock is a Clock whose timers never fire: a simulator that has
// not advanced.
type stoppedClock struct{}

func (stoppedClock) Now() time.Time { return time.Time{} }

func (stoppedClock) AfterFunc(time.Duration, func()) func() bool { return func() bool { return true } }

// TestSleepZero: a pause of zero returns at once without arming a timer,
// so it does not wait for a simulated clock to advance; a negative one is
// the same, and a positive one waits for the clock or ctx.
func TestSleepZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, d := range []time.Duration{0, -time.Second} {
			if err := sleep(context.Background(), stoppedClock{}, d); err != nil {
				t.Errorf("sleep(%v) = %v", d, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := sleep(ctx, stoppedClock{}, 0); !errors.Is(err, context.Canceled) {
			t.Errorf("sleep(0) with a cancelled ctx = %v", err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := sleep(ctx, stoppedClock{}, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("sleep on a stopped clock = %v, want ctx's deadline", err)
		}
	})
}
