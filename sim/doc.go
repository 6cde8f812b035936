// Package sim runs the real tenure server (impl.Server behind impl/httpapi)
// as a 3- or 5-node cluster with clients inside a testing/synctest bubble,
// injects seeded faults, records a full event trace and checks named
// properties over it (checks.go; linearizability via linearizability/).
//
// Time: every server gets a per-node skewed clock (sim/simclock) for its TTL
// timers, lock-delay and failure detector, and every client its own clock
// for its TTL belief. raft's own timing (elections, heartbeats, leases)
// uses the time package, i.e. the bubble clock: it cannot be skewed or
// paused per node. A paused server therefore has its network and its
// server timers frozen, while raft's internal timers keep running.
//
// Determinism: the seed fixes the fault schedule, the clocks and every
// client's choices exactly (TestReplay asserts it); the run itself replays
// identically only usually, since Go's scheduler is not seedable.
//
// Run one seed: go test ./sim -run 'TestSeeds$' -seed 42
package sim
