//go:debug randseednop=0

package simnet

import "math/rand"

// seedRaft seeds the global math/rand source that hashicorp/raft draws its
// election and heartbeat jitter from. Since Go 1.24 rand.Seed is a no-op
// unless the randseednop=0 GODEBUG is set, which the directive above does for
// this package's test binary. The source is process-wide: it cannot be seeded
// per node, and goroutine scheduling still decides which node draws next.
func seedRaft(seed int64) {
	//lint:ignore SA1019 seeding raft's global source is the point
	rand.Seed(seed)
}
