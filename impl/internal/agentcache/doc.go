// Package agentcache is the agent's cache of discovery reads: Consul's
// agent cache, as a client reaches it with `?cached` (CONSUL.md §19).
//
// It sits in front of the agent's HTTP API and answers five reads from
// memory when they carry `?cached`: /v1/catalog/service/<s>,
// /v1/health/service/<s> and /v1/catalog/services, which it keeps fresh
// in the background with blocking queries, and /v1/catalog/datacenters and
// /v1/query/<id>/execute, which it fetches again only when asked to. Every
// other request, and these without `?cached`, go straight through.
//
// What Consul does, in our words:
//
//   - An answer from memory says `X-Cache: HIT` and `Age: <seconds>`; one
//     that had to be fetched, or waited for, says `X-Cache: MISS` and no
//     Age. A failed fetch answers as the read would have, without X-Cache.
//   - Entries are per read: the path and every parameter that shapes the
//     answer (and the token), not the consistency or blocking ones. Fetches
//     are stale reads; one fetch at a time serves every waiting request.
//   - A kept-fresh entry's Age is 0 while its background query is
//     connected, and the time since the first failed refresh otherwise
//     (back to 0 once a refresh succeeds, or has been blocked 31 s).
//     Cache-Control max-age and must-revalidate do not apply to it. A
//     `?index` older than the entry's answers at once; otherwise the read
//     waits for the entry to move, up to `?wait`.
//   - The other entries' Age is the time since their fetch. `Cache-Control:
//     max-age=<s>` refetches one older than that, `max-age=0` (or
//     must-revalidate) refetches unless a fetch is already under way, and a
//     malformed value answers 400 `Invalid Cache-Control header.`.
//   - `?cached` with `?consistent` answers 400.
//   - A background refresh that fails retries at once three times, then
//     backs off exponentially from 2 s up to a minute, plus a random part.
//   - An entry nobody has read for 72 hours is dropped and its refresh
//     stopped.
//
// tenure's own bounds, beyond Consul: at most Config.MaxEntries entries and
// Config.MaxBytes of answers (the least recently read go first), no entry
// over Config.MaxEntryBytes (such a read goes straight through), and a
// blocking read waits at most 10 minutes (Consul's waits on until the
// entry moves when `?wait` is absent). `stale-if-error=<s>` serves the
// entry when a refetch fails and the entry is no older than that, as
// Consul documents it; Consul's own code path never reaches that case.
package agentcache
