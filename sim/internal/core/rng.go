package core

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// stream returns the PRNG for one named consumer of the run's seed. Each
// consumer (the fault schedule, each client, the network) draws from its own
// stream, so one consumer's draws never shift another's: the schedule and
// every client's plan depend on the seed alone, not on how the run unfolds.
func Stream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// between draws a duration uniformly from [lo, hi].
func Between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// DrawUUID draws a UUID-shaped ID from r, so that IDs (an ACL token's,
// say) repeat with the seed.
func DrawUUID(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
