// Package server is the tenure server: model.State as a hashicorp/raft FSM,
// plus the memory Consul keeps beside raft. impl/internal/httpapi serves Consul's
// HTTP API over the Backend interface; impl/agent puts the two together.
//
// Design, briefly (CONSUL.md §n is spec/CONSUL.md, the project's record of Consul):
//
//   - Log entries are one version byte, one command-type byte and the
//     command as msgpack (package fsm). An entry a server cannot decode is
//     answered with an error, never a panic; snapshots are versioned too.
//   - Lock-delay lives on every server, armed by the FSM at apply on that
//     server's Clock and forgotten on restore (CONSUL.md §4); the leader checks
//     it before proposing and stamps each lock with the index it checked at,
//     so the FSM can refuse a lock that an unseen invalidation overtook (S22).
//   - TTL deadlines live only on the leader (CONSUL.md §2): armed on create and
//     renew, re-armed for every session after each new leader's barrier
//     (S21), dropped on step-down; expiry proposes a destroy, retried with
//     backoff while the term lasts.
//   - Membership comes from gossip (Config.Membership, package gossip): the
//     leader registers alive members with serfHealth passing, sets failed
//     ones critical and deregisters those that left (package reconcile,
//     S53), adds joining servers as raft voters and removes those that
//     left (S54); -bootstrap-expect forms the cluster from gossip. These are
//     ordinary catalog writes, so invalidation follows S12/S48. A server
//     without a Membership (tests) registers itself through the leader
//     (S47) and has no failure detection.
//   - The server port carries raft and forwarded requests, told apart by
//     each connection's first byte (package rpc, Consul's layout): a
//     follower forwards to the leader's raft address (Leader), client
//     agents to a server's, naming the node the client talked to.
//   - The stores are package raftlog's: raft-wal for the durable log and
//     stable store, with the leader's fsync deferred behind an apply gate
//     and a commit clamp; snapshots in raft's file store; DataDir flock-ed
//     against a second server.
//   - Time comes only from Clock (and raft's own use of the time package),
//     so sim/ can run servers on synctest virtual time with skewed clocks.
package server
