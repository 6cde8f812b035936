// Package model is tenure's contract as a pure, deterministic state machine.
//
// A State holds the catalog (nodes, services and checks), sessions,
// prepared queries and the KV store.
// Apply(index, cmd) is its only mutator: commands are plain data, and every
// input that a real server would choose at random or read from a clock (the
// session ID, the raft index) is a field of the call, so replaying the same
// commands always yields the same states and results. State's fields are
// unexported; other packages read through accessors (reads.go, state.go),
// and a State crosses a process boundary only as a Snapshot, which Restore
// checks before it becomes a State (snapshot.go). Renumber, for checkers
// that compare states up to index renaming, is the one other writer.
//
// Two pieces of per-server memory sit beside the state machine rather than in
// it, because Consul keeps them out of raft: LockDelays (armed when a server
// applies an invalidation) and TTLDeadlines (kept by the leader only). Both are
// pure too; callers pass the time in.
//
// Clause IDs (S1…S60) refer to spec/SPEC.md.
package model
