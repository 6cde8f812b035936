// Package sim runs Go code that uses Consul's session and lock API under
// seeded faults, on virtual time, in a go test: the user's processes talk
// to a simulated tenure cluster (3 or 5 servers, a client agent per
// process) through consul/api or package recipe, and state invariants over
// what they recorded; a run checks them and tenure's own properties.
//
//	func TestMyLock(t *testing.T) {
//		sim.Check(t, sim.Options{Seed: 1, Invariants: []sim.Invariant{sim.AtMostOne("leader")}},
//			func(c *sim.Cluster) {
//				for range 3 {
//					c.Go(func(ctx context.Context, p *sim.Process) {
//						// p.API() is a *api.Client on p's own client agent;
//						// p.Begin("leader") / p.End("leader") record beliefs,
//						// p.Record(kind, value) anything else.
//					})
//				}
//			})
//	}
//
// A run boots the cluster inside a testing/synctest bubble (so a minute of
// virtual time takes about a second), starts the processes, injects the
// faults the seed draws (a process's host paused or crashed, servers
// paused, crashed, partitioned: FaultKind), stops the processes after
// Options.Duration, and checks. Check fails the test on a violation,
// shrinks it by delta debugging to a smallest schedule and set of processes
// that still breaks the same property (each candidate rerun
// Options.ShrinkRuns times), writes the artifacts (the trace, the history,
// the report, a scenario file) and prints the replay command
// (ScenarioEnv). Simulate and Shrink do the same steps without failing the
// test. example_lock_test.go is the worked case: consul/api's Lock without
// fencing loses mutual exclusion over a shared ledger under a process
// pause; the same processes on recipe.Election with recipe.Fence keep it.
// Options.ACL runs the servers with ACLs on, default deny: a process's
// API and Recipe carry the run's management token, and Process.Client
// makes clients with a narrower one the process creates, so lock code can
// be run under the token it will have in production.
//
// A module outside tenure that imports this package must copy tenure's
// replace directives for hashicorp/raft, memberlist and serf (go.mod),
// pointing at tenure's third_party copies: replace directives apply only in
// the main module, and the simulator builds on what the patches add (a
// random source per node). make sim-outside builds and runs such a module.
//
// The rest of this comment is about the simulator itself and its own tests.
// It runs the agent tenure ships (impl/agent.New, the constructor
// cmd/tenure uses, given the simulated network, clocks and stores as
// options) as a 3- or 5-server cluster with clients inside a
// testing/synctest bubble,
// injects seeded faults, records a full event trace and checks named
// properties over it. The simulator is in sim/internal:
//
//	core      the cluster on the simulated network (sim/simnet) with
//	          per-node clocks (clocks.go, sim/simclock), serf/memberlist on
//	          every agent over simnet (gossipnet.go), a client agent per
//	          simulated client (agents.go), the trace (trace.go:
//	          Event, Recorder), the fault kinds and their one schedule
//	          (faults.go), the one injector (inject.go), the resources a
//	          holder writes to (resource.go) and the start-up every run
//	          shares (env.go). Observations come from agent.ServerConfig.Observe,
//	          one per raft entry (cluster.go observe).
//	workload  the seeded driver: clients that create sessions, contend for
//	          lock keys, renew, write KV and write to the resources
//	          (workload.go plans, client.go acts), plus its client faults
//	          (workload_faults.go) and Run.
//	recipes   the recipe driver: package recipe's Election and Semaphore
//	          under faults, with their resources, and its holder faults
//	          (recipes_faults.go).
//	checks    every property, defined and run in one table (registry.go:
//	          name, SPEC clauses, what it checks, function), over the trace
//	          taken apart (index.go); linearizability through
//	          linearizability/ (linearize.go, evaluate.go); the trade-off
//	          table (tradeoff.go); each check counts the observations it
//	          judged, and a run's full timeline (timeline.go).
//	report    a failed run's one self-contained HTML page: lanes per
//	          server and client, the violations marked, porcupine's
//	          visualisation embedded (written beside the artifacts).
//
// Client agents: every simulated client (a workload client, a recipe
// process, a scene's actor) runs on its own node with its own client agent:
// the production one (impl/agent.NewClient), its gossip on simnet, joined
// to the servers' pool. The client talks HTTP only to that agent, so its
// sessions default to the agent's node and, unless they opt out, are bound
// to that node's serfHealth: the real detector decides. A client fault hits
// the host: a crash kills the agent (no leave), a pause freezes the
// agent's network too, client-partition cuts process and agent off from
// the pool; pool-loss and one-way-partition may pick an agent, and
// slow-agent delays one agent's traffic (Lifeguard's case).
//
// Agent checks and prepared queries: per seed, half of the "none" and
// "serf" groups register an agent TTL check on each client's own agent and
// bind their sessions to it as well; the client passes it at half its TTL
// on its own clock, so a slow client clock, a stalled step or a stopped
// process lets it lapse on the agent, whose anti-entropy carries it to the
// catalog. A pause or crash aimed at such a client stops only the process
// for some faults (the fault's Pick decides; its mark then names the
// process alone). Some clients bind a prepared query to each new session;
// observations record the queries an entry deleted and any left bound to a
// gone session.
//
// ACLs: a seeded run with workload.Config.ACL (TestSeeds -acl) runs every
// agent with ACLs on and default deny; the servers write a management
// token (the seed draws every secret) and, before the clients start, each
// client gets a token of its own through the API with the least it needs
// (write on its group's lock key and the plain keys, session and node
// write on its agent's node, its prepared queries). Now and then a client
// tries what its token does not allow (a key no rule names, another
// group's key, a session on a server's node: workload/acl.go). The header
// records the setup and each call its token, and the acl-enforced check
// decides every applied request, returned key and applied acquire again
// with package acl over tables built from the header (checks/acl.go). An
// ACL refusal says nothing about the state, so the linearizability
// history leaves 403s out. The agents use the management token as their
// own, so anti-entropy is never refused.
//
// Imports flow one way: core ← workload, recipes ← checks ← sim's tests.
// A driver owns only what differs: its clients, which client a client
// fault hits (core.ClientFaults), its schedule plan and its bounds.
//
// Time: every server gets a per-node skewed clock for its TTL timers and
// lock-delay, and every client its own clock for its TTL belief. raft's
// own timing (elections, heartbeats, leases) and gossip's (memberlist's
// probes and suspicion, over the simulated network: core/gossipnet.go) use
// the time package, i.e. the bubble clock: they cannot be skewed or paused
// per node. A paused server therefore has its network and its server timers
// frozen, while raft's internal timers keep running; a paused client host
// freezes its agent's network while memberlist's timers run on, so it
// suspects every member it cannot reach meanwhile and may declare one
// failed after it resumes (Bounds.StaleView covers it). The server-clock-step
// fault steps a server's clock, which production Go code would not feel
// (its deadlines use the monotonic clock); the checks measure every
// duration on the deciding server's own clock, as the spec defines.
//
// Disk: each server keeps its data on its own simulated disk (sim/simdisk:
// written and fsynced data kept apart), through the same durable path as
// the binary's: raft-wal on 256 KiB segments with the leader's fsync
// deferred behind the apply gate and the commit clamp, tenure's own
// metadata and snapshot files. A crash (crash-restart, leader-kill) drops
// the process and keeps the page cache; power-loss (one server, a
// minority or all) keeps what was fsynced and a seeded prefix of the rest,
// its last write torn at a sector, but nothing the dying process wrote
// after the cut (simdisk's CutPower); fsync-error fails every fsync, the
// server must stop (Config.Fatal crashes it; stops-on-failed-fsync checks
// it), and at the heal its disk loses power the same way; disk-stall
// makes each fsync take up to 3 s.
// A stopped server is off the network from the fault's instant (simnet
// Down), as a dead process sends nothing. rejoins-after-power-loss checks
// that a server restarted after a power loss applies new entries again;
// no-lost-writes and sequencer-unique hold across all of them. Not
// modelled: serf's snapshot file (a restarted server joins the running
// client agents itself instead), and a slow fsync meeting raft-wal's
// rotation or a snapshot (a goroutine waiting on its mutex would stop the
// bubble's clock; disk-stall's heal waits out the fsyncs under way).
//
// History (checks/linearize.go): each server-made change (TTL expiry,
// serfHealth change) is placed where the first server applied its raft
// index. A lock-delay refusal that only a server's late arming explains (a
// lagging follower or a restart's replay re-arms it from its own apply,
// S22) is left out of the history and counted (checks/latedelay.go); so is
// a request that certainly took no effect (refused dial, "No cluster
// leader").
//
// Determinism: the seed fixes the fault schedule, the clocks and every
// client's choices exactly (TestReplay asserts it). memberlist, serf and
// raft draw each use of randomness (probe order, gossip targets, staggers,
// election and heartbeat timeouts, …) from a source of their own, seeded
// per node and use (core/gossiprand.go, core/raftrand.go, through tenure's
// patches: third_party/, DESIGN.md "Patched dependencies"); the network
// draws each message's delay and loss from a stream of its own, alike
// messages at one instant told apart per stream for connection traffic
// (sim/simnet); memberlist's probe interval is 1731 ns off Consul's so its
// probe and gossip ticks never coincide; the agents' random waits come from
// the seed, the anti-entropy loop's from a stream apart from the local
// state's. Where several goroutines act at one virtual instant, the
// simulator orders them itself: messages due at one instant, and a resumed
// node's held messages and held timers, are taken one at a time, each
// settled (synctest.Wait: whatever it set going has run) before the next
// (simnet Options.Settle, core/settle.go); a server that stops itself on a
// failed fsync is crashed at the end of that instant; and what each
// applied entry wakes runs before the next entry applies. Before this,
// TestDiverge found runs parting at a paused server's or agent's resume
// (memberlist acked a held ping before or after refuting a held
// suspicion), at a forwarded request and its Cancel arriving together, at
// a failed fsync (a leader's append reached one follower or another before
// the crash) and at a restarted server's first anti-entropy sync (whether
// its registration loop read one applied batch or the next), and at a
// crashed server's last instant (whether a goroutine of the dying process
// redialed before it noticed: a down node's own dials are now refused
// untraced, as no other node can tell). What remains is Go's scheduler at
// one virtual instant elsewhere: which goroutine runs first, which ready
// case a select takes, map order. Measured by TestReplayRate (make
// replay-rate; a rerun replays when its trace digest equals the first
// run's) at GOMAXPROCS=1, every fault kind, torn power losses included,
// seeds 1–200 run twice each: on 14659ba 200 of 200 reruns replayed on 3
// servers and 199 of 200 on 5 (seed 105: a partitioned server dials a
// peer at 44.54 s in one run and not in the other, cause not found; on
// 3 servers the same seed parts too, now and then). Rates move by a seed
// or two between runs: on 6d33a2b, before the down-node fix, 197 of 200
// (seeds 105, 125, 166) and 200 of 200. Earlier: 194 and 192 of 200 on
// 3b5984e, before the settling; 0 of 30 before any of this work. At the
// default GOMAXPROCS goroutines truly race and few reruns replay, but what
// the checks decide does: make teeth-replay (TestTeethReplay) reruns every
// broken server's failing TestTeeth seeds; the same check caught 190 of
// 190 reruns (5 each of 38 failing seeds of 15 broken servers, on 14659ba,
// 2 cores); on 92a460f it was 195 of 195, on 8376c11 199 of 200.
// TestSeeds therefore runs at GOMAXPROCS=1 (-procs), and so do simlong's
// processes and every shrink (ddmin.go onOneProc). TestDiverge prints
// where two runs of a seed part.
//
// Speed: every run's summary gives virtual over wall time (TestSeeds per
// seed and batch, recipe runs, TestReplayRate; simlong per process and for
// all together). On 70739e3, seeds 1–5 with every fault kind, medians of
// 3 runs alternated with 3b5984e's on an otherwise idle 2-core machine:
// at GOMAXPROCS=1, 166× on 5 servers (3b5984e: 145×) and 230× on 3
// (200×); at the default GOMAXPROCS (2), 107× and 141× (97×, 127×): the
// second P costs about twice the CPU (spinning, locks, futex wake-ups)
// and the run is slower even in wall time, so simlong runs one
// seed per process at GOMAXPROCS=1. Merged with main's settled instants
// (cd26673 against f558341, the same way): 161× against 139× on 5
// servers and 220× against 188× on 3 at GOMAXPROCS=1. The gain came from
// the observer (the FSM copied the whole model state per entry and the
// diff sorted every table: 7% of the CPU and nearly a quarter of the
// allocations; now under 5%), simnet's per-message hashing and a GOGC of
// 200 (gc_test.go). Where a 5-server run's CPU goes, by the goroutine it
// runs on: raft 25%, memberlist and serf 20%, net/http 14%, the runtime's
// scheduler, timers and stack growth 12%, the clients and their
// consul/api 8%, server forwarding 5%, simnet's deliveries 4%, GC 3%, the
// checks after the run 4%. The traffic is production timing's: each raft follower takes about
// 22 RPCs a virtual second (a heartbeat every 100–200 ms, a replication
// wake-up every 50–100 ms from the 50 ms CommitTimeout), 44 messages with
// the replies, so 90 a second on 3 servers and 175 on 5; on 5 servers the
// 17 gossip members each probe one a second (35 packets a second, 60
// under faults); and every client request dials afresh (about 13
// connections a second, six messages each). All told about 300 messages
// a virtual second, at some 20 µs of CPU each. Raft and memberlist alone
// take about 3 ms of CPU per virtual second on 5 servers, a ceiling near
// 350× even if nothing else cost anything: 1000× would need them at other
// timings, which the simulator must not change (it runs the agent tenure
// ships).
//
// Tests: TestSeeds (a seeded batch with the trade-off table), TestTeeth
// (broken servers and failure detectors, each caught by a named check),
// TestScene* (scripted scenarios on scene_test.go's actors), TestRecipe*
// (recipe runs), TestTradeoffGossip (the trade-off table's gossip rows;
// minutes, only with -tradeoff). Run one seed:
//
//	go test ./sim -run 'TestSeeds$' -v -seed 42
//
// -break NAME runs it on one of TestTeeth's broken servers (-break list
// names them); -shrink reduces a failing seed's schedule to a smallest one
// that still fails and writes it as a scenario, which -scenario FILE
// replays.
//
// Long mode, in parallel processes with a progress line (each run writes
// one JSON line, sim/internal/seedlog):
//
//	go run ./sim/cmd/simlong -seeds 10000
package sim
