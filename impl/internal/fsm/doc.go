// Package fsm is the replicated state machine: model.State behind
// hashicorp/raft's FSM interface, the wire format of its log entries and
// snapshots (codec.go), and what applying an entry wakes: blocking reads of
// the whole state, of the catalog and of single keys, and those waiting for
// an index to be applied. What an entry means for this server's leader
// logic it tells through Effects.
package fsm
