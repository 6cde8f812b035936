// Package leader is what a leader decides around its log, without the log:
// the lock-delay check before an acquire is proposed (LockDelays, S22), the
// session IDs it hands out, the TTL book whose expiry destroys sessions
// (S19-S21), and one acquire of a key at a time. Core runs it over any
// log: server.Server proposes through raft, the HTTP API's test double
// straight to a state.
package leader
