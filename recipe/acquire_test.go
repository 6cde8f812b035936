package recipe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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
	waits   []time.Duration // ?wait of each blocking acquire-loop read
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
		e := map[string]any{"Key": "k", "LockIndex": 7, "CreateIndex": 1, "ModifyIndex": k.index}
		if k.session != "" {
			e["Session"] = k.session
		}
		_ = json.NewEncoder(w).Encode([]any{e})
	case r.URL.Path == "/v1/kv/k" && q.Has("acquire"):
		if len(k.refuse) > 0 {
			if h := k.refuse[0]; h != "" {
				w.Header().Set(LockDelayHeader, h)
			}
			k.refuse = k.refuse[1:]
			fmt.Fprint(w, "false")
			return
		}
		k.session, k.index = q.Get("acquire"), k.index+1
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
	c := fakeClient(t, k.handle)
	var refusals []Refusal
	l, err := c.Lock(LockOptions{Key: "k", OnRefused: func(r Refusal) { refusals = append(refusals, r) }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if s := h.Sequencer(); s.Session != "s1" || s.LockIndex != 7 || s.Key != "k" {
		t.Errorf("sequencer %+v", s)
	}
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	return refusals, took
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
// duration counts as absent.
func TestAcquireMalformedHeaderFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &oneKey{refuse: []string{"soon", "-1s"}, index: 3}
		refusals, _ := acquireAt(t, k)
		if len(refusals) != 2 || refusals[0].FromHeader || refusals[1].FromHeader {
			t.Errorf("refusals %+v", refusals)
		}
	})
}
