// Package sim runs the real tenure server (impl.Server behind impl/httpapi)
// as a 3- or 5-node cluster with clients inside a testing/synctest bubble,
// injects seeded faults, records a full event trace and checks named
// properties over it (registry.go names each one, its SPEC clauses and its
// function; linearizability via linearizability/).
//
// Time: every server gets a per-node skewed clock (sim/simclock) for its TTL
// timers, lock-delay and failure detector, and every client its own clock
// for its TTL belief. raft's own timing (elections, heartbeats, leases)
// uses the time package, i.e. the bubble clock: it cannot be skewed or
// paused per node. A paused server therefore has its network and its
// server timers frozen, while raft's internal timers keep running. The
// server-clock-step fault steps a server's clock, which production Go code would
// not feel (its deadlines use the monotonic clock); the checks measure
// every duration on the deciding server's own clock, as the spec defines.
//
// History (linearize.go): each server-made change (TTL expiry, serfHealth
// change) is placed where the first server applied its raft index. A
// lock-delay refusal that only a server's late arming explains (a lagging
// follower or a restart's replay re-arms it from its own apply, S22) is
// left out of the history and counted (latedelay.go); so is a request
// that certainly took no effect (refused dial, "No cluster leader").
//
// Determinism: the seed fixes the fault schedule, the clocks and every
// client's choices exactly (TestReplay asserts it); the run itself replays
// identically only usually, since Go's scheduler is not seedable: 192 of
// 200 runs (3 nodes, 10 seeds × 20) and 60 of 60 (5 nodes) at
// GOMAXPROCS=1, up to the order of events at one virtual instant.
//
// # Layout (issue 14: where this package is going)
//
// sim/ began as two harnesses in one flat package: seeded runs (run.go,
// workload.go, client.go, inject.go, faults.go, bounds.go, checks.go) and
// recipe runs (recipes*.go) side by side, with nine parallel pairs:
// Config/RecipeConfig, Result/RecipeResult, Run/runRecipe,
// defaultConfig/defaultRecipeConfig, newSchedule/newRecipeSchedule,
// AllFaultKinds/RecipeFaultKinds, injector/recipeInjector,
// Bounds/RecipeBounds, and the seeded checks beside the recipe ones.
// Observations were diffs of whole states, which could merge entries
// applied back to back.
//
// Done so far: one check registry (registry.go) for both kinds of run; one
// helper for the keys of a removed session (obsAt.goneHolders); simlong
// reads JSON lines (sim/internal/seedlog); observations come from
// impl.Config.Observe, one per raft entry (cluster.go observe), so no rule
// guesses which of several entries did what; every fault kind has one
// meaning (the old clock-skew is server-clock-step and client-clock-rate;
// the recipe kinds that aim at the holder are named holder-*).
//
// Target, reached one green commit at a time:
//
//	sim/internal/core     cluster, trace (Event, Recorder), faults (one
//	                      meaning per kind), the injector, bounds,
//	                      linearize; observations from impl.Config's
//	                      apply hook, one per raft index, carrying the
//	                      command and its result (no state diffs).
//	sim/internal/checks   the registry: one table of {name, SPEC clauses,
//	                      what it checks, func}; every property, seeded
//	                      or recipe, is defined there and checked there,
//	                      each with a teeth test (known-bad trace fails).
//	sim/internal/workload the seeded KV/session/lock driver.
//	sim/internal/recipes  the recipe driver (lock, semaphore, fence);
//	                      it owns only its processes and resources.
//	sim                   tests only (TestSeeds, TestTeeth, TestScene*,
//	                      recipes), flag -seed; nothing exported that has
//	                      no importer outside the package.
//	sim/cmd/simlong       runs seeds in parallel processes and reads the
//	                      JSON lines each run writes (one result per
//	                      seed), not `go test -v` output.
//	sim/simnet, simclock  unchanged.
//
// Tests: TestSeeds (a seeded batch with the trade-off table), TestTeeth
// (broken servers, each caught by a named check), TestScene* (scripted
// scenarios on scene_test.go's actors). Run one seed:
//
//	go test ./sim -run 'TestSeeds$' -v -seed 42
//
// Long mode, in parallel processes with a progress line:
//
//	go run ./sim/cmd/simlong -seeds 10000
package sim
