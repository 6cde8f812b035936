// Package local is the agent's own state of services and checks and the
// anti-entropy that copies it to the catalog. The HTTP layer drives an
// Agent; the Agent runs checks through impl/internal/checks and syncs through a
// Catalog, which the server implements with raft writes (MemCatalog is the
// in-memory double tests use).
//
// What Consul does, in our words (spec/CONSUL.md is the project's record):
//
//   - Checks run on their agent and only the agent decides their status;
//     the catalog learns it by anti-entropy. A TTL check on a dead agent
//     therefore never expires in the catalog (serfHealth covers that).
//   - A status change marks the check out of sync and starts a partial
//     sync at once, one write carrying the check and its service; the
//     agent's pass, warn, fail and update endpoints also sync before they
//     answer, so the status is in the catalog when the call returns. An
//     output-only change stays local for check_update_interval/2 plus a
//     random part of check_update_interval (5 min by default, so 2.5–7.5
//     min) before it is written; meanwhile full syncs compare checks with
//     their output blanked, so the pending output is not forced out early.
//   - A full sync runs every ae_interval (1 min) plus a random part of it
//     scaled by cluster size (×1 up to 128 members, then +1 per doubling),
//     after 15 s (similarly scaled) when it failed, and soon after a new
//     leader (random part of 3 s, scaled). It reads the node's services and
//     checks from the catalog, rewrites what differs and deletes what the
//     agent does not have, except the "consul" service and the "serfHealth"
//     check, which the leader owns. Deleting something already gone counts
//     as done; an ACL refusal leaves the entry alone until the next full sync.
//   - Each service and check keeps the ACL token it was registered with
//     (the request's, or the agent's default token at that moment; a config
//     file's token field), persisted with it and never shown. A
//     registration is written with that token, else, for one the
//     configuration or the agent defined, the config-file registration
//     token, else the default token (SyncConfig.RegisterToken); a check
//     rides on its service's write only when both carry the same token.
//     Deregistrations and reads use the agent token, which is the caller's.
//   - A check with DeregisterCriticalServiceAfter (at least 1 min) that has
//     been critical locally that long takes its whole service and the
//     service's checks with it; the reaper looks every 30 s.
//   - Maintenance mode adds a critical check: "_node_maintenance" ("Node
//     Maintenance Mode") or "_service_maintenance:<id>" ("Service
//     Maintenance Mode"), Type "maintenance", Notes the reason or a default
//     sentence. Enabling twice is a no-op; disabling removes the check.
//   - Service registration: Name required, ID defaults to Name, addresses
//     0.0.0.0 and :: refused, weights default to 1/1; the service's checks get
//     IDs "service:<id>" (or "service:<id>:<n>" from 1 when there are
//     several) and names "Service '<name>' check".
//   - With a data directory, what the API registered (and the maintenance
//     checks) is kept there and restored at start, before the first full
//     sync; every restored check is critical until it runs, except a TTL
//     check whose last pass, warn, fail or update has not yet had its TTL
//     run out (persist.go, restore.go).
//
// Syncs go one at a time (Consul's SyncChanges holds the state's lock for
// its whole run). Changes made while one is writing merge into the one
// partial sync the loop runs after it, and an endpoint's sync waits its
// turn and writes only what is still out of sync then: however fast
// checks change, an agent has at most one catalog write in flight.
// tenure's own bounds, beyond Consul: at most maxServices services and
// maxChecks checks per agent.
package local
