package core

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/simclock"
)

// TestPauseClockResumesInDueOrder: a paused server's timers that fell due
// meanwhile run on resume one at a time, in the order they fell due, each
// done before the next starts. Released together (the gate's old single
// channel) the scheduler picked the order; at GOMAXPROCS=1 the last one
// readied tends to run first.
func TestPauseClockResumesInDueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, err := simclock.New(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := &pauseClock{inner: inner}
		var mu sync.Mutex
		var got []string
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, s)
		}
		p.pause()
		for i, name := range []string{"a", "b", "c"} {
			p.AfterFunc(time.Duration(i+1)*time.Second, func() {
				note(name + "-start")
				time.Sleep(0) // a callback that yields does not let the next one in
				note(name + "-end")
			})
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if len(got) != 0 {
			t.Fatalf("callbacks ran while paused: %v", got)
		}
		p.resume(newSettler().Settle)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if s, want := strings.Join(got, " "), "a-start a-end b-start b-end c-start c-end"; s != want {
			t.Fatalf("resumed callbacks ran as %q, want %q", s, want)
		}
	})
}
