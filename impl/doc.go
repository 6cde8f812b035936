// Package impl is the tenure server: model.State as a hashicorp/raft FSM,
// plus the memory Consul keeps beside raft. impl/httpapi serves Consul's
// HTTP API over the Backend interface; impl/agent puts the two together.
//
// Design, briefly (CONSUL.md §n is spec/CONSUL.md, the project's record of Consul):
//
//   - Log entries are one version byte, one command-type byte and the
//     command as msgpack (codec.go). An entry a server cannot decode is
//     answered with an error, never a panic; snapshots are versioned too.
//   - Lock-delay lives on every server, armed by the FSM at apply on that
//     server's Clock and forgotten on restore (CONSUL.md §4); the leader checks
//     it before proposing and stamps each lock with the index it checked at,
//     so the FSM can refuse a lock that an unseen invalidation overtook (S22).
//   - TTL deadlines live only on the leader (CONSUL.md §2): armed on create and
//     renew, re-armed for every session after each new leader's barrier
//     (S21), dropped on step-down; expiry proposes a destroy, retried with
//     backoff while the term lasts.
//   - Each server keeps its own node registered with its HTTP address and a
//     passing serfHealth (S47): directly when it leads, otherwise through the
//     leader's PUT /v1/catalog/register. The catalog address is how
//     followers find the leader's HTTP API.
//   - Failure detection replaces Consul's gossip: the leader watches raft's
//     heartbeat observations and marks a peer's serfHealth critical after
//     FailureThreshold of continuous failure, passing when heartbeats resume.
//     Both are ordinary catalog writes, so invalidation follows S12/S48.
//   - Membership is static: every server starts with the full peer list and
//     bootstraps it if its stores are empty (like -bootstrap-expect N).
//   - The durable log and stable store is raft-wal (BenchmarkLogStore: an
//     fsynced one-entry append 101 µs vs 280 µs for raft-boltdb v1),
//     snapshots are raft's file store; DataDir is flock-ed against a second
//     server.
//   - Time comes only from Clock (and raft's own use of the time package),
//     so sim/ can run servers on synctest virtual time with skewed clocks.
package impl
