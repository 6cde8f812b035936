package sim

import (
	"encoding/json"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestSeeds runs one seed (-seed N) or a batch (-seeds N, default a small
// batch that fits in `make test`), checks every property on each run, and
// prints the trade-off table.
func TestSeeds(t *testing.T) {
	seeds := []uint64{*flagSeed}
	if *flagSeed == 0 {
		n := *flagSeeds
		if n == 0 {
			n = 20 // ≈15 s of wall time on 2 cores
		}
		seeds = nil
		for i := range n {
			seeds = append(seeds, *flagFirst+uint64(i))
		}
	}
	table := NewTradeoff()
	start := time.Now()
	for _, seed := range seeds {
		res := runSeed(t, configFromFlags(t, seed))
		ev := checkResult(t, res)
		table.Add(res.Events)
		t.Logf("seed %d: %d events, virtual %v, wall %v, digest %s, %d violations, lin %s (%d ops, %d late lock-delay refusals excused)",
			seed, len(res.Events), res.Virtual.Round(time.Second), time.Since(start).Round(time.Millisecond), res.Digest, len(ev.Violations), ev.Lin.Verdict, ev.Lin.Ops, ev.Excused)
	}
	table.Print(os.Stdout)
}

// TestReplay runs one seed several times at GOMAXPROCS=1 and reports how
// often the whole trace replays identically. It asserts what the seed does
// fix exactly: the fault schedule, clocks and client plans (the header).
func TestReplay(t *testing.T) {
	n := *flagReplays
	seed := *flagSeed
	if seed == 0 {
		seed = 1
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	digests := map[string]int{}
	var header string
	for i := range n {
		res := runSeed(t, configFromFlags(t, seed))
		h, err := json.Marshal(res.Header)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			header = string(h)
		} else if string(h) != header {
			t.Fatalf("seed %d: run %d drew a different schedule or plan", seed, i)
		}
		digests[res.Digest]++
	}
	best := 0
	for _, c := range digests {
		best = max(best, c)
	}
	t.Logf("seed %d: %d of %d runs replayed to the most common trace (%d distinct traces)", seed, best, n, len(digests))
}
