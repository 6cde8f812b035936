package core

import (
	"fmt"
	"math/rand"
)

// raftRand gives incarnation inc of server node its raft randomness (the
// election, follower-heartbeat and snapshot timeouts, and a leader's
// per-follower, per-term replication and heartbeat timeouts), one source
// per use, seeded from the run's seed, the node, its incarnation and the
// use. Upstream raft draws them all from the global math/rand, and a new
// leader's replication and heartbeat goroutines draw at one virtual
// instant, so which got which value depended on goroutine order. It needs
// the patched raft (third_party/raft, DESIGN.md "Patched dependencies").
func (c *Cluster) raftRand(node string, inc int) func(use string) *rand.Rand {
	return func(use string) *rand.Rand {
		return rand.New(rand.NewSource(int64(Stream(c.seed, fmt.Sprintf("raft/%s/%d/%s", node, inc, use)).Uint64())))
	}
}
