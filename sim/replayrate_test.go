package sim

import (
	"flag"
	"runtime"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/workload"
)

// Flags of TestReplayRate.
var (
	flagReplayRate  = flag.Bool("replay-rate", false, "TestReplayRate: measure how often a seed's reruns replay its first run")
	flagReplayProcs = flag.Int("replay-procs", 1, "TestReplayRate: GOMAXPROCS for the runs (0: leave the default)")
)

// TestReplayRate runs each seed of the batch (-seeds, -first-seed, with
// -nodes and -faults) -replays times and reports the share of reruns whose
// trace digest equals the seed's first run's: the replay rate. The issue's
// goal is at least 99 % at GOMAXPROCS=1. It only measures (make
// replay-rate); it fails nothing.
//
//	go test ./sim -run 'TestReplayRate$' -v -replay-rate -seeds 20 -replays 5 -nodes 3
func TestReplayRate(t *testing.T) {
	if !*flagReplayRate {
		t.Skip("only with -replay-rate")
	}
	n := *flagSeeds
	if n == 0 {
		n = 10
	}
	if *flagReplays < 2 {
		t.Fatal("-replays must be at least 2")
	}
	if *flagReplayProcs > 0 {
		prev := runtime.GOMAXPROCS(*flagReplayProcs)
		defer runtime.GOMAXPROCS(prev)
	}
	same, reruns, seedsAll := 0, 0, 0
	var virtual time.Duration
	start := time.Now()
	for i := range n {
		seed := *flagFirst + uint64(i)
		cfg := configFromFlags(t, seed)
		res := runSeed(t, cfg)
		first := res.Digest
		virtual += res.Virtual
		ok := 0
		for range *flagReplays - 1 {
			res := runSeed(t, cfg)
			virtual += res.Virtual
			if res.Digest == first {
				ok++
			}
		}
		same += ok
		reruns += *flagReplays - 1
		if ok == *flagReplays-1 {
			seedsAll++
		}
		t.Logf("seed %d: %d of %d reruns replayed run 1 (%s)", seed, ok, *flagReplays-1, first)
	}
	t.Logf("replay rate: %d of %d reruns identical (%.1f%%); %d of %d seeds replayed every time (nodes %d, faults %s, GOMAXPROCS %d; %s)",
		same, reruns, 100*float64(same)/float64(reruns), seedsAll, n, *flagNodes, *flagFaults, runtime.GOMAXPROCS(0), speedup(virtual, time.Since(start)))
}

// TestSeedsReplay: at GOMAXPROCS=1 a seed's rerun gives its first run's
// trace digest, with ACLs off and on. Replaying a seed is what a user of
// the simulator relies on to look at a failure again; an agent loop that
// lets Go's select choose among ready events broke it once for every seed
// (impl/internal/local's Syncer.next). When it fails, TestDiverge shows
// where the two runs part.
func TestSeedsReplay(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for _, seed := range []uint64{1, 2} {
		for _, withACL := range []bool{false, true} {
			cfg := workload.DefaultConfig(seed)
			cfg.ACL = withACL
			first := runSeed(t, cfg).Digest
			if again := runSeed(t, cfg).Digest; again != first {
				t.Errorf("seed %d (acl %v): rerun's digest %s, first run's %s", seed, withACL, again, first)
			}
		}
	}
}
