package sim

import (
	"os"
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
			n = 4
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
		t.Logf("seed %d: %d events, virtual %v, wall %v, digest %s, %d violations, lin %s (%d ops)",
			seed, len(res.Events), res.Virtual.Round(time.Second), time.Since(start).Round(time.Millisecond), res.Digest, len(ev.Violations), ev.Lin.Verdict, ev.Lin.Ops)
	}
	table.Print(os.Stdout)
}
