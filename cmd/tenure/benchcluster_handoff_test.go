package main

import (
	"context"
	"fmt"
	"net/http"
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
	var clients []*recipe.Client
	for i := range 2 {
		c, err := recipe.NewClient(&api.Config{Address: cl.https[i], Transport: &http.Transport{}})
		if err != nil {
			return nil, fmt.Errorf("recipe client: %w", err)
		}
		clients = append(clients, c)
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
