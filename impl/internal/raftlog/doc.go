// Package raftlog is a server's raft storage, and the only code that knows
// raft-wal's files: the log and stable store on zero-filled segments
// (segmentfill.go), the leader's fsync deferred behind an apply gate and a
// commit clamp (logsync.go), the repair of a rotation raft-wal left half
// done (segmentrotation.go), and the lock that keeps a second server off a
// data directory. Open gives a server its stores; in dev mode they are
// raft's in-memory ones.
package raftlog
