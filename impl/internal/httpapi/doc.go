// Package httpapi serves a wire-compatible subset of Consul's HTTP API
// (sessions, KV, txn, blocking reads, the catalog part sessions depend on, and
// status) over a server.Backend.
//
// The handler holds no state of its own. Every write goes through
// Backend.Apply on the leader; a follower forwards writes and non-stale reads
// to the leader's server port (Backend.Leader, Options.Forward, package
// impl/internal/rpc), where the leader runs this same handler on them. A forwarded
// request carries its origin, the node of the agent the client talked to, in
// its context (rpc.OriginFrom), set by the forwarding server or client agent
// and never taken from a header; one that another server forwarded is never
// forwarded again, so a confused follower cannot forward in a loop. Blocking
// reads wait on Backend.Changed and time out on Backend.Clock, so the
// simulator's virtual time governs them; a caller that gives up closes its
// forwarded stream, which ends the read on the leader too.
//
// Status mapping (spec/SPEC.md S8, S39): input the caller got wrong answers
// 400 with a one-line plain-text reason, oversized input 413, a broken
// calling contract 500. Options.Compat switches to Consul's codes, which
// answer 500 for every rejection that happens at apply and for bad numbers.
// Clause IDs (S1…S52) refer to spec/SPEC.md; "CONSUL.md §n" to
// spec/CONSUL.md.
package httpapi
