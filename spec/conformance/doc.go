// Package conformance is a black-box conformance suite for servers that
// speak Consul's session, KV-lock and txn HTTP API: real Consul and tenure.
//
// Every case is named after a clause of spec/SPEC.md ("S27/...") and has
// that clause's status. A profile picks what runs: contract runs contract
// clauses, consul adds Consul's own wire behaviour, tenure adds tenure's
// stronger guarantees. Cases outside the profile, and clauses a client
// cannot observe, are reported SKIP with the reason.
//
// Cases speak only HTTP, each under its own key prefix and node names, and
// clean up after themselves, so they run in parallel against a live
// server. TTL and lock-delay cases wait on real timers (the slowest, the
// 60s lock-delay cap, bounds a full run to about a minute).
//
// The ACL cases (S84-S88, one of S89) need a server with ACLs on, default_policy
// "deny", and a management token (-token): only the ACL profiles run them
// (acl for their contract clauses, acl-consul and acl-tenure adding each
// one's own), and those profiles run nothing else.
//
// The S53 cases about failed, left and force-left members need gossip
// members they may kill: they start client agents from -agent, a binary of
// the server's kind with Consul's agent flags (consul for a Consul server,
// tenure for tenure), join them to the server's pool, and report SKIP
// without one.
//
// Entry points: Run (library), Main (the `tenure conform` command), and
// `go test ./spec/conformance -addr URL -profile P [-agent BIN] [-filter RE]`;
// with no -addr the test uses the in-process server a test file of this
// package starts (dev_test.go: a tenure dev agent), and skips without one.
package conformance
