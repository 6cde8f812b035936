// Package tla ties the TLA+ specification in this directory (Sessions.tla,
// MCSessions.tla and the MCSessions_*.cfg models) to the Go model.
//
// The explorer walks, breadth first, the same abstract state space TLC walks
// for a config, but every store transition is computed by model.State.Apply,
// lock-delays by model.LockDelays, TTL deadlines by model.TTLDeadlines and
// sequencer checks by model.State.CheckSequencer. Each reached state is
// projected onto the TLA+ variables (abs) and deduplicated there, so the
// distinct-state count must equal TLC's (recorded in expected.json; an entry
// marked "measured_by": "explorer" holds the explorer's own count for a spec
// change TLC has not run on yet, see README.md). Every
// state is checked against the Go versions of the config's invariants and
// against model.CheckInvariants; every step against the action properties
// and model.CheckTransition.
//
// TLC's counterexamples (traces/*.json, written by run_tlc.sh) replay through
// the same code, action by action, to the same violation.
package tla
