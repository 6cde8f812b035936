package impl

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestFailureDetectorThresholdAndResume(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var events []string
	note := func(kind string) func(string) {
		return func(peer string) {
			mu.Lock()
			events = append(events, kind+" "+peer)
			mu.Unlock()
		}
	}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(events)
	}
	waitEvents := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(got()) < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return got()
	}
	d := newFailureDetector(clock, 5*time.Second, note("critical"), note("passing"))
	d.heartbeatFailed("n2") // inactive: ignored
	d.start()
	d.heartbeatFailed("n2")
	clock.Advance(3 * time.Second)
	d.heartbeatFailed("n2") // same episode: does not restart the threshold
	d.heartbeatResumed("n3")
	clock.Advance(2*time.Second - time.Nanosecond)
	if e := got(); len(e) != 0 {
		t.Fatalf("events before the threshold: %v", e)
	}
	clock.Advance(time.Nanosecond)
	if e := waitEvents(1); !slices.Equal(e, []string{"critical n2"}) {
		t.Fatalf("events = %v, want [critical n2]", e)
	}
	if !d.isFailing("n2") {
		t.Fatal("n2 not failing after being marked critical")
	}
	d.heartbeatResumed("n2")
	if e := waitEvents(2); !slices.Equal(e, []string{"critical n2", "passing n2"}) {
		t.Fatalf("events = %v, want critical then passing", e)
	}
	// A short blip that resumes before the threshold marks nothing.
	d.heartbeatFailed("n3")
	clock.Advance(time.Second)
	d.heartbeatResumed("n3")
	clock.Advance(time.Minute)
	// A step-down forgets an episode in progress.
	d.heartbeatFailed("n4")
	d.stop()
	clock.Advance(time.Minute)
	time.Sleep(10 * time.Millisecond)
	if e := got(); len(e) != 2 {
		t.Fatalf("events = %v, want only the n2 pair", e)
	}
}
