package simnet

import (
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// TestSpeedReport measures virtual seconds simulated per wall second for idle
// clusters. It logs numbers instead of asserting on them (timing depends on the
// machine); it asserts only that the cluster kept working. By default it
// simulates one virtual minute per case; SIMNET_REPORT=1 simulates an hour.
func TestSpeedReport(t *testing.T) {
	virtual := time.Minute
	if os.Getenv("SIMNET_REPORT") != "" {
		virtual = time.Hour
	}
	for _, tc := range []struct {
		name   string
		nodes  int
		drop   float64
		traced bool
	}{
		{"3 nodes idle", 3, 0, false},
		{"3 nodes idle, traced", 3, 0, true},
		{"5 nodes idle", 5, 0, false},
		{"3 nodes idle, 10% drops", 3, 0.1, false},
	} {
		var st Stats
		var terms uint64
		// Wall time is read outside the bubble (inside, time is virtual); it
		// includes cluster start-up, about a millisecond.
		wallStart := time.Now()
		synctest.Test(t, func(t *testing.T) {
			seedRaft(9)
			link := lan
			link.DropRate = tc.drop
			c := newCluster(t, tc.nodes, Options{Seed: 9, Link: link}, nil)
			if !tc.traced {
				c.net.mu.Lock()
				c.net.opts.OnEvent = nil
				c.net.mu.Unlock()
			}
			defer c.shutdown()
			first := c.waitLeader(30 * time.Second)
			term0 := c.rafts[first].CurrentTerm()
			vstart := time.Now()
			time.Sleep(virtual)
			if got := time.Since(vstart); got != virtual {
				t.Errorf("slept %v of virtual time, want %v", got, virtual)
			}
			// Without faults an idle cluster must never re-elect; with drops
			// it may churn but must end up with a leader again.
			last := c.waitLeader(30 * time.Second)
			terms = c.rafts[last].CurrentTerm()
			if tc.drop == 0 && (last != first || terms != term0) {
				t.Errorf("%s: leader/term moved from %d/%d to %d/%d without faults", tc.name, first, term0, last, terms)
			}
			st = c.net.Stats()
		})
		wall := time.Since(wallStart)
		t.Logf("%s: %v virtual in %v wall = %.0f virtual s per wall s; %d messages sent, %d dropped, final term %d",
			tc.name, virtual, wall.Round(time.Millisecond), virtual.Seconds()/wall.Seconds(), st.Sent, st.Dropped, terms)
	}
}
