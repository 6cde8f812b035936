package sim

import (
	"flag"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// Flags of TestTeethReplay.
var (
	flagTeethReplays = flag.Int("teeth-replays", 0, "TestTeethReplay: reruns of each broken server's failing seeds (0: skip the test)")
	flagTeethSeeds   = flag.Int("teeth-seeds", 3, "TestTeethReplay: seeds tried per broken server (TestTeeth tries up to 3)")
	flagTeethOnly    = flag.String("teeth-only", "", "TestTeethReplay: run only the broken server of this name")
)

// TestTeethReplay measures how reproducible TestTeeth's failures are: for
// each broken server it runs seeds 1..-teeth-seeds once, and reruns each
// seed whose run the expected check caught -teeth-replays times at the
// default GOMAXPROCS, counting the reruns that the same check catches
// again. The goal is at least 99 %. It only measures (make
// teeth-replay); it fails nothing.
//
//	go test ./sim -run 'TestTeethReplay$' -v -timeout 0 -args -teeth-replays 10
func TestTeethReplay(t *testing.T) {
	if *flagTeethReplays <= 0 {
		t.Skip("only with -teeth-replays N")
	}
	caught := func(t *testing.T, cfg workload.Config, expect string) bool {
		// As TestTeeth: the named check decides; linearizability's budget
		// is TestTeeth's.
		return slices.Contains(checks.Evaluate(runSeed(t, cfg), time.Second).Caught(), expect)
	}
	allAgain, allReruns := 0, 0
	for _, tc := range teethCases() {
		if *flagTeethOnly != "" && tc.v.Name != *flagTeethOnly {
			continue
		}
		t.Run(tc.v.Name, func(t *testing.T) {
			again, reruns, failing := 0, 0, 0
			for seed := uint64(1); seed <= uint64(*flagTeethSeeds); seed++ {
				cfg := tc.cfg(seed)
				cfg.Variant = tc.v
				if !caught(t, cfg, tc.expect) {
					t.Logf("seed %d: not caught by %s", seed, tc.expect)
					continue
				}
				failing++
				ok := 0
				for range *flagTeethReplays {
					if caught(t, cfg, tc.expect) {
						ok++
					}
				}
				t.Logf("seed %d: caught by %s again in %d of %d reruns", seed, tc.expect, ok, *flagTeethReplays)
				again += ok
				reruns += *flagTeethReplays
			}
			allAgain += again
			allReruns += reruns
			if reruns > 0 {
				t.Logf("%s: %d of %d reruns of %d failing seeds caught again by %s (%.1f%%)", tc.v.Name, again, reruns, failing, tc.expect,
					100*float64(again)/float64(reruns))
			}
		})
	}
	if allReruns > 0 {
		t.Logf("teeth replay rate: %d of %d reruns caught again by the same check (%.1f%%, GOMAXPROCS %d)",
			allAgain, allReruns, 100*float64(allAgain)/float64(allReruns), runtime.GOMAXPROCS(0))
	}
}
