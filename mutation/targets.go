package main

// target is one package under mutation, optionally narrowed to the files that
// decide what a checker accepts (the server's transport and store glue is left to
// the crash and conformance tests).
type target struct {
	name string
	dir  string
	// files, when set, are the only files mutated; the rest of the package
	// is excluded.
	files []string
}

// targets are what `make mutate` covers. New checkers (gossip, checks,
// services) join this list as they land.
var targets = []target{
	{name: "model", dir: "model"},
	{name: "linearizability", dir: "linearizability"},
	{name: "recipe", dir: "recipe"},
	{name: "reconcile", dir: "impl/internal/reconcile"},
	{name: "server", dir: "impl/internal/server", files: []string{
		"apply.go",         // proposing a command on the leader
		"leaderconfirm.go", // when a refusal may trust the leader's state (S29)
		"membership.go",    // the leader's gossip reconcile and voter changes
		"bootstrap.go",     // -bootstrap-expect
	}},
	// The state machine: what a committed entry does to the state, and
	// waiting for it to reach an index.
	{name: "fsm", dir: "impl/internal/fsm", files: []string{"fsm.go", "appliedwait.go"}},
	// The leader's decisions: the lock-delay check, session IDs, the TTL book
	// and expiry.
	{name: "leader", dir: "impl/internal/leader", files: []string{"core.go", "lockdelays.go", "ttltimers.go"}},
	// The raft log's storage: when a log entry counts as durable, and
	// finishing a rotation raft-wal left half done.
	{name: "raftlog", dir: "impl/internal/raftlog", files: []string{"logsync.go", "segmentrotation.go"}},
	// impl/internal/gossip is mostly serf and memberlist wiring (their failure
	// detection is theirs), but toMember decides how a member reads for
	// the leader's reconcile: its status, whether it is a server, its raft
	// address and its bootstrap tags.
	{name: "gossip", dir: "impl/internal/gossip"},
	// An agent's own checks: what a definition means (decode, validation,
	// thresholds) and when a runner reports critical on its own.
	{name: "checks", dir: "impl/internal/checks"},
	// The agent's local state and anti-entropy: which change becomes a
	// catalog write, and when.
	{name: "local", dir: "impl/internal/local"},
	// When an agent holds a session create for its own registration (S47):
	// a server agent's gate and a client agent's hold.
	{name: "agent", dir: "impl/agent", files: []string{"registeredgate.go"}},
	{name: "httpapi", dir: "impl/internal/httpapi", files: []string{"clientregistered.go"}},
}
