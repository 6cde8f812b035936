package clocktest

import (
	"sync"
	"testing"
	"time"
)

func TestManualClockFiresOnlyDueTimers(t *testing.T) {
	c := NewManual(time.Unix(0, 0))
	var mu sync.Mutex
	var fired []string
	var wg sync.WaitGroup
	arm := func(name string, d time.Duration) *manualTimer {
		wg.Add(1)
		return c.AfterFunc(d, func() {
			defer wg.Done()
			mu.Lock()
			fired = append(fired, name)
			mu.Unlock()
		}).(*manualTimer)
	}
	arm("a", 10*time.Second)
	b := arm("b", 20*time.Second)
	stopped := arm("stopped", 5*time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports wrongly whether the timer was armed")
	}
	wg.Done() // the stopped timer never runs
	c.Advance(9 * time.Second)
	if c.Pending() != 2 {
		t.Fatalf("pending %d after 9s, want 2", c.Pending())
	}
	c.Advance(time.Second)
	if b.Reset(time.Second) != true { // moves b to 11s
		t.Fatal("Reset of an armed timer reported it idle")
	}
	c.Advance(time.Second)
	wg.Wait()
	if c.Pending() != 0 || len(fired) != 2 || fired[0] == "stopped" || fired[1] == "stopped" {
		t.Fatalf("fired %v, pending %d", fired, c.Pending())
	}
	if c.Now() != time.Unix(11, 0) {
		t.Fatalf("now %v", c.Now())
	}
}
