// Package raftlog is a server's raft storage, and the only code that knows
// raft-wal's files: the log and stable store on zero-filled segments
// (segmentfill.go), the leader's fsync deferred behind an apply gate and a
// commit clamp (logsync.go), the repair of a rotation raft-wal left half
// done (segmentrotation.go), and the lock that keeps a second server off a
// data directory. Open gives a server its stores; in dev mode they are
// raft's in-memory ones.
//
// Every file operation goes through an impl/disk.FS: disk.OS in production,
// an in-memory disk that can lose power in the simulator (sim/simdisk). On
// any disk but the OS, raft-wal's metadata is a file of tenure's own
// (filemeta.go) instead of BoltDB, and snapshots are kept by snapshots.go
// instead of raft's FileSnapshotStore, as both of those need real files.
package raftlog
