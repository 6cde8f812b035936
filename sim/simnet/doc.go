// Package simnet is a simulated network for running several hashicorp/raft
// nodes and HTTP clients inside one testing/synctest bubble on virtual time.
//
// Create a Network inside the bubble with New. Every message (raft RPC,
// reply, or a chunk of a client connection's byte stream) travels between two
// named nodes. A node's name is the host part of an address: raft address
// "n1" or "n1:8300" and HTTP address "n1:8500" are all node "n1"; an HTTP
// client's node is whatever name it passes to Dialer ("client-3").
//
// Semantics, chosen to be simple and deterministic:
//
//   - Delay: each message takes Link.Latency plus a uniform jitter in
//     [0, Link.Jitter], on bubble timers. Links are directed; SetLink
//     overrides the default for one direction.
//   - Randomness: every decision (drop, jitter) about a message is drawn
//     from a PCG stream of its own, derived from the seed, the directed
//     link, the message's description (kind, size, raft terms and
//     indexes) and the instant it is sent, so its draws do not depend on
//     the order in which goroutines sent at one instant (messages
//     described alike at one instant are told apart by count: per link,
//     or per stream for connection traffic, whose writers on two streams
//     race while each stream's own writes keep their order).
//   - Arrival order: messages are delivered in (arrival time, send order).
//     RPCs may overtake each other under jitter, as on separate TCP
//     connections; each connection's byte stream stays FIFO.
//   - RPC loss: a request or a reply is lost when the link is cut at send or
//     at arrival time (in-flight loss), when the target has no open
//     transport, or with probability Link.DropRate (request and reply drawn
//     independently). The caller learns nothing and returns ErrRPCTimeout
//     after Options.RPCTimeout (Options.SnapshotTimeout for InstallSnapshot).
//   - Stream loss: a connection's chunk is never silently lost (that would
//     corrupt the stream); each DropRate hit instead delays it by
//     Options.RetransmitDelay, and after MaxRetransmits consecutive hits the
//     connection breaks, like a TCP retransmission timeout.
//   - Partitions (Partition, PartitionOneWay, Isolate) refuse new dials at
//     once and break existing connections crossing the cut in either
//     direction: both ends' pending and future reads and writes fail with
//     ErrConnBroken. They do not black-hole connections.
//   - Pause holds: while a node is paused, messages it sends and messages
//     that arrive for it are queued in order; Resume re-sends the outgoing
//     ones (fresh latency and drop draws) and delivers the incoming ones at
//     the resume instant, in order, each settled before the next when
//     Options.Settle is set. Callers waiting on a held RPC still time out, so a
//     resumed node can receive stale requests, like a process that was
//     stopped. For drop semantics use Isolate instead. The paused node's own
//     goroutines (raft timers) keep running; only its network is frozen.
//
// The event hook (Options.OnEvent) is called synchronously, under the
// network's lock, in the order events happen; it must not call back into
// the Network. Event.ID numbers messages per directed link. Compare runs with
// CanonicalTrace, which ignores the order of events within one virtual
// instant (the scheduler's choice, not the simulation's).
//
// Determinism: the seed fixes every network decision, but raft draws its
// timeouts from the global math/rand unless its Config.Rand (tenure's
// patch, third_party/raft) gives each use a seeded source (else seed it with rand.Seed plus
// "//go:debug randseednop=0" in a _test.go file) and Go's scheduler is not
// seedable. Measured at GOMAXPROCS=1: a partition scenario replays its
// canonical trace 150/150; 300 applies submitted 1ms apart with 5% loss
// 149/150; the same 300 submitted at one instant 134/150 (raft batches them
// as goroutines interleave); under -race or GOMAXPROCS=2 far less. To make
// runs replay: start raft nodes one at a time with synctest.Wait() after
// each NewRaft, and spread client operations over virtual time.
package simnet
