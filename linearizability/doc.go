// Package linearizability checks recorded histories of tenure's session and
// KV API against the model, with porcupine.
//
// A simulator or implementation test records a History: client operations
// (Op: client, call and return times, a model.Command or a Read, the
// Output, and Unknown when the outcome was never learned), server-initiated
// invalidations (Event: a TTL expiry, check going critical or node
// deregistered, known to lie within [Earliest, Latest]) and injected faults
// (drawn on failure). Recorder builds one concurrently; its JSON form is
// the encoding/json form of the types, e.g. testdata/histories.
//
// Check(history, Options{Timeout, ArtifactDir, Annotations}) decides it.
// The porcupine model's step is model.State.Apply (and the model's read
// helpers): the checker adds only what a history needs beyond the model,
//
//   - server-chosen session IDs, taken from the create's output;
//   - raft indexes, which clients cannot predict, compared relatively;
//   - lock-delay, decided from operation windows and the configured delays;
//   - per-key partitioning with the session and catalog operations and the
//     events replayed in every partition.
//
// DESIGN.md explains each, and why per-key checking never rejects a
// linearizable history. The result is ok, illegal, or unknown (the timeout
// ran out); only ok is a pass. On failure, porcupine's HTML visualisation,
// the history and a summary are written to Options.ArtifactDir.
package linearizability
