package simnet

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

// scenario runs one seeded fault schedule on a fresh 3-node cluster and
// returns the network trace. The workload and fault schedule are fixed by
// the seed; only goroutine scheduling can make two runs differ.
type scenario func(t *testing.T, seed uint64) []string

// partitionScenario: sequential applies, leader isolation, heal.
func partitionScenario(t *testing.T, seed uint64) []string {
	var out []string
	synctest.Test(t, func(t *testing.T) {
		seedRaft(int64(seed))
		c := newCluster(t, 3, Options{Seed: seed, Link: lan}, nil)
		defer c.shutdown()
		l := c.waitLeader(10 * time.Second)
		for v := range uint64(20) {
			if err := c.rafts[l].Apply(cmd(v), time.Second).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.net.Isolate(c.names[l]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		c.net.Heal()
		time.Sleep(3 * time.Second)
		out = traceLines(c.trace.all())
	})
	return out
}

// lossyScenario: 300 applies in flight together, submitted 1ms apart, on a
// link with 5% loss.
func lossyScenario(t *testing.T, seed uint64) []string { return lossy(t, seed, time.Millisecond) }

// burstScenario: like lossyScenario but all 300 submitted at one instant, so
// how raft batches them depends on goroutine interleaving.
func burstScenario(t *testing.T, seed uint64) []string { return lossy(t, seed, 0) }

func lossy(t *testing.T, seed uint64, gap time.Duration) []string {
	var out []string
	synctest.Test(t, func(t *testing.T) {
		seedRaft(int64(seed))
		lossy := lan
		lossy.DropRate = 0.05
		c := newCluster(t, 3, Options{Seed: seed, Link: lossy}, nil)
		defer c.shutdown()
		l := c.waitLeader(30 * time.Second)
		var fs []raft.ApplyFuture
		for v := range uint64(300) {
			fs = append(fs, c.rafts[l].Apply(cmd(v), 5*time.Second))
			time.Sleep(gap)
		}
		for _, f := range fs {
			_ = f.Error() // may fail if leadership moves; the trace records it
		}
		time.Sleep(3 * time.Second)
		out = traceLines(c.trace.all())
	})
	return out
}

// traceLines renders a trace either raw or canonical (see CanonicalTrace).
var traceLines = CanonicalTrace

// replayRate runs sc runs times with one seed at GOMAXPROCS=1 and returns how
// many runs reproduced the first run's trace exactly, and the trace length.
func replayRate(t *testing.T, sc scenario, seed uint64, runs int) (same, events int) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	first := strings.Join(sc(t, seed), "\n")
	same = 1
	for range runs - 1 {
		if strings.Join(sc(t, seed), "\n") == first {
			same++
		}
	}
	return same, strings.Count(first, "\n") + 1
}

// TestReplayDeterminism measures how often a seed replays its canonical trace
// exactly at GOMAXPROCS=1 and asserts floors well below what was measured on
// a quiet machine (partition 150/150, lossy 149/150, burst 134/150 over
// seeds 11-13). Other processes competing for the CPU lower the rate (17 of
// 20 for partition was seen under load), so the floors only catch a run
// that has stopped replaying at all.
func TestReplayDeterminism(t *testing.T) {
	const runs = 20
	for _, tc := range []struct {
		name string
		sc   scenario
		min  int
	}{
		{"partition", partitionScenario, 10},
		{"lossy-1ms-apart", lossyScenario, 10},
		{"burst-same-instant", burstScenario, 0}, // reported, not asserted
	} {
		same, events := replayRate(t, tc.sc, 11, runs)
		t.Logf("%s: %d of %d runs replayed the %d-event trace exactly (GOMAXPROCS=1)", tc.name, same, runs, events)
		if same < tc.min && !raceEnabled {
			t.Errorf("%s: only %d of %d runs replayed exactly, want at least %d", tc.name, same, runs, tc.min)
		}
	}
	// The comparison itself can fail: another seed gives another trace.
	if strings.Join(partitionScenario(t, 11), "\n") == strings.Join(partitionScenario(t, 12), "\n") {
		t.Error("seeds 11 and 12 produced the same trace")
	}
}

func TestCanonicalTraceSortsOnlyWithinAnInstant(t *testing.T) {
	evs := []Event{
		{At: 1, Kind: Send, From: "b", To: "a", ID: 1},
		{At: 1, Kind: Send, From: "a", To: "b", ID: 1},
		{At: 2, Kind: Deliver, From: "b", To: "a", ID: 1},
		{At: 2, Kind: Deliver, From: "a", To: "b", ID: 1},
	}
	swapped := []Event{evs[1], evs[0], evs[3], evs[2]}
	if strings.Join(CanonicalTrace(evs), "|") != strings.Join(CanonicalTrace(swapped), "|") {
		t.Error("same-instant reordering changed the canonical trace")
	}
	moved := slices.Clone(evs)
	moved[3].At = 3
	if strings.Join(CanonicalTrace(evs), "|") == strings.Join(CanonicalTrace(moved), "|") {
		t.Error("an event at another instant left the canonical trace unchanged")
	}
	later := []Event{evs[2], evs[3], evs[0], evs[1]} // out of time order
	if got := CanonicalTrace(later); !strings.HasPrefix(got[0], "2ns ") || !strings.HasPrefix(got[1], "2ns ") {
		t.Errorf("events across instants were reordered: %v", got)
	}
}
