package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/consul/api"
)

// oneKey is a fake server holding one free key whose first refusals
// acquires are scripted: refuse[i] is the X-Tenure-Lock-Delay of the i-th
// refusal ("" = a bare false, as Consul answers). Blocking reads of the
// unchanged key wait out their ?wait on the virtual clock.
type oneKey struct {
	mu      sync.Mutex
	refuse  []string
	session string
	index   uint64
	// createIndex is the key's CreateIndex (default 1).
	createIndex uint64
	waits       []time.Duration // ?wait of each blocking acquire-loop read

	// Scripted failures: the statuses of the next acquire-loop reads, of
	// the next acquire PUTs, and of the next consistent reads (the Hold's
	// monitor once Acquire has returned).
	readFail, putFail, monitorFail []int
	reads, puts                    int // acquire-loop reads and acquire PUTs seen
	// staleReads answers that many acquire-loop reads after each acquire
	// as a deposed leader would: the key as it was before the acquire.
	staleReads, staleLeft int
	// namedLockIndex, if set, is the X-Tenure-Lock-Index of a successful
	// acquire, sent with X-Tenure-Modify-Index, as a tenure server names
	// the holding period (S64); unset, the answer is Consul's bare true.
	namedLockIndex string
	// stop, if set, is called instead of answering acquire-loop read
	// number stopAt (a hang guard for tests that never acquire).
	stop   func()
	stopAt int
}

// fail answers r with the first of *codes, if any, and drops it.
func fail(w http.ResponseWriter, codes *[]int) bool {
	if len(*codes) == 0 {
		return false
	}
	http.Error(w, "scripted failure", (*codes)[0])
	*codes = (*codes)[1:]
	return true
}

func (k *oneKey) handle(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	q := r.URL.Query()
	switch {
	case r.URL.Path == "/v1/session/create":
		fmt.Fprint(w, `{"ID":"s1"}`)
	case strings.HasPrefix(r.URL.Path, "/v1/session/renew/"):
		fmt.Fprint(w, `[{"ID":"s1","TTL":"10s"}]`)
	case strings.HasPrefix(r.URL.Path, "/v1/session/destroy/"):
		fmt.Fprint(w, `true`)
	case r.URL.Path == "/v1/kv/k" && r.Method == "GET":
		if q.Has("consistent") {
			if fail(w, &k.monitorFail) {
				return
			}
		} else {
			k.reads++
			if k.stop != nil && k.reads == k.stopAt {
				k.stop()
				http.Error(w, "test over", 500)
				return
			}
			if fail(w, &k.readFail) {
				return
			}
		}
		if idx, _ := strconv.ParseUint(q.Get("index"), 10, 64); idx != 0 && idx == k.index {
			d, _ := time.ParseDuration(q.Get("wait"))
			if !q.Has("consistent") { // the Hold's monitor reads consistently
				k.waits = append(k.waits, d)
			}
			k.mu.Unlock()
			time.Sleep(d)
			k.mu.Lock()
		}
		w.Header().Set("X-Consul-Index", strconv.FormatUint(k.index, 10))
		e := map[string]any{"Key": "k", "LockIndex": 7, "CreateIndex": max(k.createIndex, 1), "ModifyIndex": k.index}
		switch {
		case !q.Has("consistent") && k.staleLeft > 0:
			k.staleLeft-- // the key before the acquire: free, an older lock index
			e["LockIndex"], e["ModifyIndex"] = 6, k.index-1
		case k.session != "":
			e["Session"] = k.session
		}
		_ = json.NewEncoder(w).Encode([]any{e})
	case r.URL.Path == "/v1/kv/k" && q.Has("acquire"):
		k.puts++
		if fail(w, &k.putFail) {
			return
		}
		if len(k.refuse) > 0 {
			if h := k.refuse[0]; h != "" {
				w.Header().Set(LockDelayHeader, h)
			}
			k.refuse = k.refuse[1:]
			fmt.Fprint(w, "false")
			return
		}
		if k.session != q.Get("acquire") {
			k.staleLeft = k.staleReads // a new hold: the next reads may lag it
		}
		k.session, k.index = q.Get("acquire"), k.index+1
		if k.namedLockIndex != "" {
			w.Header().Set(LockIndexHeader, k.namedLockIndex)
			w.Header().Set(ModifyIndexHeader, strconv.FormatUint(k.index, 10))
		}
		fmt.Fprint(w, "true")
	case r.URL.Path == "/v1/kv/k" && q.Has("release"):
		k.session, k.index = "", k.index+1
		fmt.Fprint(w, "true")
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), 400)
	}
}

// acquireAt runs one Acquire against k and returns the refusals seen and
// the virtual time the acquire took.
func acquireAt(t *testing.T, k *oneKey) ([]Refusal, time.Duration) {
	t.Helper()
	return acquireWith(t, k, LockOptions{})
}

// acquireWith is acquireAt with options o (Key and OnRefused are set here).
func acquireWith(t *testing.T, k *oneKey, o LockOptions) ([]Refusal, time.Duration) {
	t.Helper()
	h, refusals, took, err := tryAcquireAt(t, k, o)
	if err != nil {
		t.Fatal(err)
	}
	if s := h.Sequencer(); s.Session != "s1" || s.LockIndex != 7 || s.Key != "k" {
		t.Errorf("sequencer %+v", s)
	}
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	return refusals, took
}

// tryAcquireAt runs one Acquire with o against k and returns what it gave,
// the refusals seen and the virtual time it took.
func tryAcquireAt(t *testing.T, k *oneKey, o LockOptions) (*Hold, []Refusal, time.Duration, error) {
	t.Helper()
	c := fakeClient(t, k.handle)
	var refusals []Refusal
	o.Key, o.OnRefused = "k", func(r Refusal) { refusals = append(refusals, r) }
	l, err := c.Lock(o)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h, err := l.Acquire(context.Background())
	return h, refusals, time.Since(start), err
}

// TestAcquireReadBackOfAStaleState: the read-back after a true is a
// default read, which a deposed leader may answer with the key as it was
// before the acquire. The sequencer is never taken from such a state: the
// loop acquires again (a no-op for the holder) and reads again, and the
// sequencer comes from the state that shows the hold.
func TestAcquireReadBackOfAStaleState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{index: 3, staleReads: 1}
		_, took := acquireAt(t, k) // checks the sequencer: s1, lock index 7
		if k.puts != 2 || k.reads != 3 {
			t.Errorf("%d acquires and %d reads, want 2 and 3 (read, acquire, stale read-back, acquire, read-back)", k.puts, k.reads)
		}
		if took != 0 {
			t.Errorf("took %v, want no pause", took)
		}
	})
}

// TestAcquireTakesTheNamedSequencer: a success that names its holding
// period (S64) is the sequencer, with no read-back; a malformed name is
// taken as absent, and the key is read back as on Consul.
func TestAcquireTakesTheNamedSequencer(t *testing.T) {
	for _, tc := range []struct {
		name, lockIndex string
		wantReads       int
	}{
		{"named", "7", 1},         // read, acquire
		{"malformed", "seven", 2}, // read, acquire, read-back
		{"zero", "0", 2},          // no holding period has LockIndex 0
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := &oneKey{index: 3, namedLockIndex: tc.lockIndex}
				h, _, _, err := tryAcquireAt(t, k, LockOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if s := h.Sequencer(); s != (Sequencer{Key: "k", LockIndex: 7, Session: "s1", ModifyIndex: 4}) {
					t.Errorf("sequencer %+v", s)
				}
				if k.puts != 1 || k.reads != tc.wantReads {
					t.Errorf("%d acquires and %d reads, want 1 and %d", k.puts, k.reads, tc.wantReads)
				}
				if err := h.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestAcquireSleepsExactlyTheHeader: with X-Tenure-Lock-Delay the recipe
// retries after exactly the named delay (S25), no polling.
func TestAcquireSleepsExactlyTheHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{refuse: []string{"1.5s"}, index: 3}
		refusals, took := acquireAt(t, k)
		if len(refusals) != 1 || !refusals[0].FromHeader || refusals[0].Remaining != 1500*time.Millisecond || refusals[0].Wait != 1500*time.Millisecond {
			t.Errorf("refusals %+v", refusals)
		}
		if took != 1500*time.Millisecond {
			t.Errorf("acquire took %v, want exactly the header's 1.5s", took)
		}
		if len(k.waits) != 0 {
			t.Errorf("blocking reads %v, want none", k.waits)
		}
	})
}

// TestAcquireConsulFallback: a bare false on a free key (Consul's lock-delay
// answer) makes the recipe wait on the key with blocking reads of growing
// length, 100ms, 200ms, 400ms, ..., capped at RetryMax.
func TestAcquireConsulFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{refuse: []string{"", "", "", "", "", "", ""}, index: 3}
		refusals, took := acquireAt(t, k)
		want := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
		var sum time.Duration
		for i := range want {
			want[i] *= time.Millisecond
			sum += want[i]
		}
		if len(refusals) != len(want) {
			t.Fatalf("refusals %+v", refusals)
		}
		for i, r := range refusals {
			if r.FromHeader || r.Wait != want[i] {
				t.Errorf("refusal %d = %+v, want bare with wait %v", i, r, want[i])
			}
		}
		if fmt.Sprint(k.waits) != fmt.Sprint(want) {
			t.Errorf("blocking reads waited %v, want %v", k.waits, want)
		}
		if took != sum {
			t.Errorf("acquire took %v, want %v", took, sum)
		}
	})
}

// TestAcquireMalformedHeaderFallsBack: a header that is not a positive
// duration (0s included) counts as absent.
func TestAcquireMalformedHeaderFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{refuse: []string{"soon", "-1s", "0s"}, index: 3}
		refusals, _ := acquireAt(t, k)
		if len(refusals) != 3 || refusals[0].FromHeader || refusals[1].FromHeader || refusals[2].FromHeader {
			t.Errorf("refusals %+v", refusals)
		}
	})
}

// TestAcquireEqualRetryBounds: RetryMin == RetryMax is a fixed pause, not
// a bad range: every bare refusal waits exactly that.
func TestAcquireEqualRetryBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{refuse: []string{"", "", ""}, index: 3}
		refusals, took := acquireWith(t, k, LockOptions{RetryMin: time.Second, RetryMax: time.Second})
		if len(refusals) != 3 || took != 3*time.Second {
			t.Errorf("refusals %+v in %v, want three 1s waits", refusals, took)
		}
		for _, r := range refusals {
			if r.Wait != time.Second {
				t.Errorf("refusal %+v, want a 1s wait", r)
			}
		}
	})
}

// TestAcquireRetriesServerErrors: a read or an acquire answered 5xx is
// retried after the backoff pause (100ms, then 200ms), not returned.
func TestAcquireRetriesServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		k         *oneKey
		wantReads int
		wantPuts  int
		took      time.Duration
	}{
		// Reads: the failed one, the retry, and the read-back after the
		// acquire (a default read, like the others).
		{"read 500", &oneKey{readFail: []int{500}}, 3, 1, 100 * time.Millisecond},
		{"acquire 500 then 503", &oneKey{putFail: []int{500, 503}}, 4, 3, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := tc.k
				k.index = 3
				_, took := acquireAt(t, k)
				if took != tc.took || k.reads != tc.wantReads || k.puts != tc.wantPuts {
					t.Errorf("took %v with %d reads and %d acquires, want %v, %d, %d", took, k.reads, k.puts, tc.took, tc.wantReads, tc.wantPuts)
				}
			})
		})
	}
}

// TestAcquireGivesUpOnClientErrors: a 4xx answer to the read or the
// acquire cannot improve by retrying, so Acquire returns it at once.
func TestAcquireGivesUpOnClientErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    *oneKey
		code int
	}{
		{"read 403", &oneKey{readFail: []int{403}}, 403},
		{"acquire 400", &oneKey{putFail: []int{400}}, 400},
		{"acquire 404", &oneKey{putFail: []int{404}}, 404},
		{"acquire 499", &oneKey{putFail: []int{499}}, 499},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := tc.k
				k.index = 3
				h, _, took, err := tryAcquireAt(t, k, LockOptions{})
				var se api.StatusError
				if h != nil || !errors.As(err, &se) || se.Code != tc.code {
					t.Fatalf("Acquire = %v, %v; want the %d", h, err, tc.code)
				}
				if took != 0 || k.reads+k.puts > 2 {
					t.Errorf("gave up after %v, %d reads, %d acquires; want at once", took, k.reads, k.puts)
				}
			})
		})
	}
}

// TestLockWaitTime: each blocking read on a held key asks for WaitTime,
// DefaultWaitTime when it is zero or negative.
func TestLockWaitTime(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{
		{0, DefaultWaitTime},
		{-time.Second, DefaultWaitTime},
		{5 * time.Second, 5 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.set), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				k := &oneKey{session: "other", index: 3, stop: cancel, stopAt: 4}
				c := fakeClient(t, k.handle)
				l, err := c.Lock(LockOptions{Key: "k", WaitTime: tc.set})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
					t.Fatalf("Acquire on a held key: %v", err)
				}
				// Read 1 is not blocking, 2 and 3 block, 4 ends the test.
				if want := fmt.Sprint([]time.Duration{tc.want, tc.want}); fmt.Sprint(k.waits) != want {
					t.Errorf("blocking reads waited %v, want %v", k.waits, want)
				}
			})
		})
	}
}

// TestHoldSurvivesMonitorErrors: a failed read of the Hold's monitor is
// retried; it is the renewer's business to decide that contact is lost.
func TestHoldSurvivesMonitorErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{index: 3}
		h, _, _, err := tryAcquireAt(t, k, LockOptions{})
		if err != nil {
			t.Fatal(err)
		}
		k.mu.Lock()
		k.monitorFail = []int{500, 500}
		k.mu.Unlock()
		time.Sleep(time.Hour)
		select {
		case <-h.Lost():
			t.Fatalf("hold lost after monitor read errors: %v", h.Err())
		default:
		}
		if err := h.Release(context.Background()); err != nil || !errors.Is(h.Err(), ErrReleased) {
			t.Errorf("Release = %v, Err = %v", err, h.Err())
		}
	})
}
