package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// liveHolders counts, in one listing of a semaphore prefix, the sessions
// that S51 calls holders: listed in .lock's Holders and holding their own
// contender key.
func liveHolders(pairs api.KVPairs, prefix string) (int, error) {
	var rec semaphoreRecord
	held := map[string]string{}
	for _, p := range pairs {
		if p.Key == prefix+"/"+SemaphoreKey {
			if err := json.Unmarshal(p.Value, &rec); err != nil {
				return 0, fmt.Errorf("decode .lock: %w", err)
			}
			continue
		}
		held[p.Key] = p.Session
	}
	n := 0
	for h := range rec.Holders {
		if held[prefix+"/"+h] == h {
			n++
		}
	}
	return n, nil
}

// admissions tracks how many slots the test's contenders believe they
// hold at once; enter is called after Acquire returns and leave before
// Release, so the count it sees never exceeds the server's.
type admissions struct {
	mu       sync.Mutex
	cur, max int
	total    int
}

func (a *admissions) enter() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cur++
	a.total++
	a.max = max(a.max, a.cur)
}

func (a *admissions) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cur--
}

// TestAdmissionCheckersCatchOverflow shows both checkers fail on an
// overfull semaphore.
func TestAdmissionCheckersCatchOverflow(t *testing.T) {
	var a admissions
	for range 3 {
		a.enter()
	}
	if a.max != 3 {
		t.Errorf("admissions max = %d after three concurrent enters", a.max)
	}
	pairs := api.KVPairs{
		{Key: "p/.lock", Value: []byte(`{"Limit":2,"Holders":{"a":true,"b":true,"c":true,"d":true}}`)},
		{Key: "p/a", Session: "a"}, {Key: "p/b", Session: "b"}, {Key: "p/c", Session: "c"},
		{Key: "p/d", Session: ""}, // d's key was released: d no longer counts
	}
	if n, err := liveHolders(pairs, "p"); err != nil || n != 3 {
		t.Errorf("liveHolders = %d, %v; want 3", n, err)
	}
	if _, err := liveHolders(api.KVPairs{{Key: "p/.lock", Value: []byte("{")}}, "p"); err == nil {
		t.Error("liveHolders accepted a corrupt .lock")
	}
}

// observe lists prefix after every change until ctx ends and records the
// largest live-holder count seen (S51's check at one index per listing).
func observe(ctx context.Context, c *Client, prefix string) (maxSeen func() (int, error)) {
	var mu sync.Mutex
	var seen int
	var ferr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var idx uint64
		for ctx.Err() == nil {
			pairs, meta, err := c.API.KV().List(prefix+"/", (&api.QueryOptions{WaitIndex: idx, WaitTime: 10 * time.Second, RequireConsistent: true}).WithContext(ctx))
			if err != nil {
				if ctx.Err() == nil {
					mu.Lock()
					ferr = err
					mu.Unlock()
				}
				return
			}
			n, err := liveHolders(pairs, prefix)
			mu.Lock()
			seen = max(seen, n)
			if err != nil && len(pairs) > 0 {
				ferr = err
			}
			mu.Unlock()
			idx = meta.LastIndex
		}
	}()
	return func() (int, error) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen, ferr
	}
}

// TestSemaphoreLimitTwoFourContenders: four contenders, three rounds each,
// never more than two holders, by the contenders' own count and by an
// observer applying S51's definition to every listing it sees.
func TestSemaphoreLimitTwoFourContenders(t *testing.T) {
	prefix := uniq("sem")
	octx, stop := context.WithCancel(context.Background())
	maxSeen := observe(octx, testClient(t, nil), prefix)
	var a admissions
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := testClient(t, nil)
			s, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 2, Value: []byte(fmt.Sprint(i)), Session: shortSession()})
			if err != nil {
				errs <- err
				return
			}
			for range 3 {
				slot, err := s.Acquire(context.Background())
				if err != nil {
					errs <- err
					return
				}
				a.enter()
				if err := slot.Verify(context.Background()); err != nil {
					errs <- fmt.Errorf("admitted slot fails Verify: %w", err)
				}
				time.Sleep(20 * time.Millisecond) // hold a while so others contend
				a.leave()
				if err := slot.Release(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	within(t, 60*time.Second, "contenders", wg.Wait)
	stop()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen, err := maxSeen()
	if err != nil {
		t.Errorf("observer: %v", err)
	}
	t.Logf("admissions %d, max concurrent by contenders %d, by observer %d", a.total, a.max, seen)
	if a.total != 12 {
		t.Errorf("%d admissions, want 12", a.total)
	}
	if a.max > 2 || seen > 2 {
		t.Errorf("more than Limit=2 holders: contenders saw %d, observer %d", a.max, seen)
	}
	s, _ := testClient(t, nil).Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 2})
	if err := s.Cleanup(context.Background()); err != nil {
		t.Errorf("cleanup after all released: %v", err)
	}
}

// TestSemaphoreInteropWithAPI: api.Semaphore and ours share a prefix and a
// Limit of 2: each sees the other's holders, waits for room, and is admitted
// when the other releases; mismatched Limits and a lock on the same prefix
// are refused.
func TestSemaphoreInteropWithAPI(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	prefix := uniq("interop")
	newAPISem := func() *api.Semaphore {
		s, err := c.API.SemaphoreOpts(&api.SemaphoreOptions{Prefix: prefix, Limit: 2, SessionTTL: "10s"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	apiA, apiB := newAPISem(), newAPISem()
	if _, err := apiA.Acquire(nil); err != nil {
		t.Fatal(err)
	}
	ours, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 2, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	var slot *Slot
	within(t, 30*time.Second, "our acquire beside one api holder", func() { slot, err = ours.Acquire(ctx) })
	if err != nil {
		t.Fatal(err)
	}

	// Full now: api.Semaphore must wait for our release.
	got := make(chan error, 1)
	go func() {
		lost, err := apiB.Acquire(nil)
		if err == nil && lost == nil {
			err = errors.New("api acquire gave up")
		}
		got <- err
	}()
	pairs, _, err := c.API.KV().List(prefix+"/", &api.QueryOptions{RequireConsistent: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := liveHolders(pairs, prefix); err != nil || n != 2 {
		t.Fatalf("live holders = %d, %v; want api's and ours", n, err)
	}
	select {
	case err := <-got:
		t.Fatalf("api semaphore admitted past the limit (err %v)", err)
	default:
	}
	if err := slot.Release(ctx); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, "api acquire after our release", func() { err = <-got })
	if err != nil {
		t.Fatal(err)
	}

	// Both slots are api's: ours waits until one is released.
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, 1)
	var slot2 *Slot
	go func() {
		var err error
		slot2, err = ours.Acquire(ctx2)
		res <- err
	}()
	if err := apiA.Release(); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, "our acquire after api's release", func() { err = <-res })
	if err != nil {
		t.Fatal(err)
	}
	if err := slot2.Verify(ctx); err != nil {
		t.Errorf("Verify: %v", err)
	}
	defer slot2.Release(ctx)
	defer apiB.Release()

	other, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 3, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx); !errors.Is(err, ErrLimitConflict) {
		t.Errorf("Limit 3 on a Limit 2 semaphore: err = %v, want ErrLimitConflict", err)
	}
	l, err := c.Lock(LockOptions{Key: prefix + "/" + SemaphoreKey, Flags: api.LockFlagValue, StrictFlags: true, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("lock on a semaphore's .lock: err = %v, want ErrConflict", err)
	}
}

// TestSemaphoreSlotLostOnSessionDestroy: destroying a holder's session
// closes its Lost, and its stale contender sequencer no longer fences.
func TestSemaphoreSlotLostOnSessionDestroy(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	s, err := c.Semaphore(SemaphoreOptions{Prefix: uniq("semlost"), Limit: 1, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	slot, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Release(ctx)
	if _, err := c.API.Session().Destroy(slot.Sequencer().Session, nil); err != nil {
		t.Fatal(err)
	}
	within(t, 15*time.Second, "slot Lost", func() { <-slot.Lost() })
	if !errors.Is(slot.Err(), ErrHolderChanged) && !errors.Is(slot.Err(), ErrSessionGone) {
		t.Errorf("Err = %v", slot.Err())
	}
	if err := slot.Verify(ctx); !errors.Is(err, ErrStaleSequencer) {
		t.Errorf("Verify after loss: %v, want ErrStaleSequencer", err)
	}
}
