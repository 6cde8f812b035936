package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/recipe"
)

// Lock hand-off: how long after the holder gives a lock up the waiter,
// already waiting on another server, holds it. Both clients speak only
// consul/api, so each runs unchanged against Consul and tenure.

const (
	handOffTimes = 20 // per round; the roles swap every time
	// handOffSettle lets the waiter create its session and enter its
	// blocking read before the holder lets go.
	handOffSettle = 300 * time.Millisecond
	handOffLimit  = 60 * time.Second
)

type handOff struct {
	name string
	run  func(cl *benchProcs, round int) ([]time.Duration, error)
}

var handOffs = []handOff{
	{"consul/api Lock (Unlock → Lock returns)", apiLockHandOff},
	{"recipe.Election (Release → Campaign returns)", electionHandOff},
	{"consul/api Lock, 4 contenders holding once each", apiLockChain},
	{"recipe.Lock, 4 contenders holding once each", recipeLockChain},
}

// apiLockHandOff: consul/api's Lock with its defaults (a 15s-TTL session of
// its own, created on Lock and destroyed on Unlock).
func apiLockHandOff(cl *benchProcs, round int) ([]time.Duration, error) {
	key := fmt.Sprintf("bench/r%d/handoff-api", round)
	clients := []*api.Client{cl.client(0), cl.client(1)}
	lockOn := func(i int) (*api.Lock, error) {
		l, err := clients[i].LockOpts(&api.LockOptions{Key: key})
		if err != nil {
			return nil, fmt.Errorf("lock options: %w", err)
		}
		return l, nil
	}
	h := 0
	holder, err := lockOn(h)
	if err != nil {
		return nil, err
	}
	if _, err := holder.Lock(nil); err != nil {
		return nil, fmt.Errorf("first lock: %w", err)
	}
	defer func() { _ = holder.Unlock() }()
	var ds []time.Duration
	for range handOffTimes {
		waiter, err := lockOn(1 - h)
		if err != nil {
			return nil, err
		}
		stop := make(chan struct{})
		type result struct {
			at   time.Time
			held bool
			err  error
		}
		got := make(chan result, 1)
		go func() {
			ch, err := waiter.Lock(stop)
			got <- result{time.Now(), ch != nil, err}
		}()
		time.Sleep(handOffSettle)
		t0 := time.Now()
		if err := holder.Unlock(); err != nil {
			close(stop)
			return nil, fmt.Errorf("unlock: %w", err)
		}
		var r result
		select {
		case r = <-got:
		case <-time.After(handOffLimit):
			close(stop)
			r = <-got
			return nil, fmt.Errorf("the waiter did not get the lock within %v (%v)", handOffLimit, r.err)
		}
		if r.err != nil || !r.held {
			close(stop)
			return nil, fmt.Errorf("waiter's Lock: held %v, %v", r.held, r.err)
		}
		ds = append(ds, r.at.Sub(t0))
		holder, h = waiter, 1-h
	}
	return ds, nil
}

// electionHandOff: the project's recipe.Election with its defaults (a
// 15s-TTL session per candidacy, destroyed on Release).
func electionHandOff(cl *benchProcs, round int) ([]time.Duration, error) {
	service := fmt.Sprintf("bench-r%d", round)
	clients, err := recipeClients(cl, 2)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	campaign := func(i int) (*recipe.Hold, error) {
		e, err := clients[i].Election(service, recipe.LockOptions{})
		if err != nil {
			return nil, fmt.Errorf("election: %w", err)
		}
		return e.Campaign(ctx)
	}
	h := 0
	term, err := campaign(h)
	if err != nil {
		return nil, fmt.Errorf("first campaign: %w", err)
	}
	defer func() { _ = term.Release(context.Background()) }()
	var ds []time.Duration
	for range handOffTimes {
		type result struct {
			at   time.Time
			term *recipe.Hold
			err  error
		}
		got := make(chan result, 1)
		go func(i int) {
			t, err := campaign(i)
			got <- result{time.Now(), t, err}
		}(1 - h)
		time.Sleep(handOffSettle)
		t0 := time.Now()
		if err := term.Release(ctx); err != nil {
			return nil, fmt.Errorf("resign: %w", err)
		}
		var r result
		select {
		case r = <-got:
		case <-time.After(handOffLimit):
			cancel()
			r = <-got
			return nil, fmt.Errorf("the other candidate was not elected within %v (%v)", handOffLimit, r.err)
		}
		if r.err != nil {
			return nil, fmt.Errorf("campaign: %w", r.err)
		}
		ds = append(ds, r.at.Sub(t0))
		term, h = r.term, 1-h
	}
	return ds, nil
}

// The chains are issue 17's `consul lock` of a command that ends at once:
// chainContenders clients on the servers in turn all ask for one lock
// together, and each lets it go as soon as it holds it. A gap is from one
// holder letting go until the next one holds; a client that lost the race
// for a key that is free again by the time it looks shows up as a long
// gap: api takes that for lock-delay and sleeps 5s (spec/CONSUL.md §9, §11).
const (
	chainContenders = 4
	chainBatches    = 3 // per round, so (chainContenders-1)·chainBatches gaps
)

// lockChain runs the batches; lock(i, stop) blocks until contender i holds
// the lock (or stop closes) and returns how to let it go.
func lockChain(lock func(i int, stop <-chan struct{}) (unlock func() error, err error)) ([]time.Duration, error) {
	var gaps []time.Duration
	for range chainBatches {
		var mu sync.Mutex
		var held []time.Time // when each contender held the lock, and let go at once
		stop := make(chan struct{})
		errs := make(chan error, chainContenders)
		var wg sync.WaitGroup
		for i := range chainContenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				unlock, err := lock(i, stop)
				if err != nil {
					errs <- fmt.Errorf("contender %d: %w", i, err)
					return
				}
				at := time.Now()
				if err := unlock(); err != nil {
					errs <- fmt.Errorf("contender %d let go: %w", i, err)
					return
				}
				mu.Lock()
				held = append(held, at)
				mu.Unlock()
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(handOffLimit):
			close(stop)
			<-done
			return nil, fmt.Errorf("%d contenders did not all hold the lock within %v", chainContenders, handOffLimit)
		}
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
		slices.SortFunc(held, time.Time.Compare)
		for i := 1; i < len(held); i++ {
			gaps = append(gaps, held[i].Sub(held[i-1]))
		}
	}
	return gaps, nil
}

// apiLockChain: consul/api's Lock with its defaults.
func apiLockChain(cl *benchProcs, round int) ([]time.Duration, error) {
	key := fmt.Sprintf("bench/r%d/chain-api", round)
	var clients []*api.Client
	for i := range chainContenders {
		clients = append(clients, cl.client(i))
	}
	return lockChain(func(i int, stop <-chan struct{}) (func() error, error) {
		l, err := clients[i].LockOpts(&api.LockOptions{Key: key})
		if err != nil {
			return nil, fmt.Errorf("lock options: %w", err)
		}
		ch, err := l.Lock(stop)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if ch == nil {
			return nil, errors.New("stopped before holding the lock")
		}
		return l.Unlock, nil
	})
}

// recipeLockChain: the project's recipe.Lock with its defaults.
func recipeLockChain(cl *benchProcs, round int) ([]time.Duration, error) {
	key := fmt.Sprintf("bench/r%d/chain-recipe", round)
	clients, err := recipeClients(cl, chainContenders)
	if err != nil {
		return nil, err
	}
	return lockChain(func(i int, stop <-chan struct{}) (func() error, error) {
		l, err := clients[i].Lock(recipe.LockOptions{Key: key})
		if err != nil {
			return nil, fmt.Errorf("lock options: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		h, err := l.Acquire(ctx)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("acquire: %w", err)
		}
		return func() error {
			defer cancel()
			return h.Release(context.Background())
		}, nil
	})
}

// recipeClients are n recipe clients on the servers in turn, each with a
// transport of its own.
func recipeClients(cl *benchProcs, n int) ([]*recipe.Client, error) {
	var cs []*recipe.Client
	for i := range n {
		c, err := recipe.NewClient(&api.Config{Address: cl.https[i%len(cl.https)], Transport: &http.Transport{}})
		if err != nil {
			return nil, fmt.Errorf("recipe client: %w", err)
		}
		cs = append(cs, c)
	}
	return cs, nil
}
