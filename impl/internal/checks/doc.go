// Package checks holds an agent's own health checks: the definition a client
// registers (PUT /v1/agent/check/register, or the Check/Checks of a service),
// its validation, and the runners that produce a status for each check.
// impl/internal/local keeps the resulting state and pushes it to the catalog.
//
// What Consul does, in our words (spec/CONSUL.md is the project's record):
//
//   - The register body is decoded strictly: an unknown field is a 400
//     "Request decode failed: …". Field names match case-insensitively, a
//     few snake_case spellings are accepted as aliases ("args",
//     "script_args", "deregister_critical_service_after",
//     "docker_container_id", "tls_server_name", "tls_skip_verify",
//     "service_id"), and durations are Go duration strings or integer
//     nanoseconds.
//   - The type is chosen by which field is set, first match wins in the
//     order TTL, HTTP, H2PING, TCP, UDP, GRPC, Docker, script, alias,
//     OSService; so a body with both HTTP and TCP is an HTTP check, not an
//     error. Interval-based checks need Interval > 0 and an interval under
//     one second is raised to one second, not refused. A body with no type
//     at all is refused as a TTL check with TTL ≤ 0.
//   - Missing ID means ID = Name; missing Status means critical. Registering
//     an ID that exists replaces the check (impl/internal/local keeps the old status
//     and output so re-registration does not flap).
//   - Script checks, and docker checks (a script run in a container), need
//     enable_script_checks when they come over HTTP, or either that or
//     enable_local_script_checks when they come from the agent's own
//     configuration; otherwise a 500.
//   - Thresholds: the first result always applies; after it, passing or
//     warning needs SuccessBeforePassing consecutive successes, and failures
//     turn warning at FailuresBeforeWarning and critical at
//     FailuresBeforeCritical consecutive failures (FailuresBeforeWarning
//     defaults to FailuresBeforeCritical). TTL checks bypass thresholds.
//   - Output is capped at OutputMaxSize (agent default 4096 bytes; a check
//     may only lower it). HTTP bodies and script output keep their last
//     bytes; posted TTL output keeps its first bytes with a "(captured N of M
//     bytes)" note.
//   - HTTP: 2xx passing, 429 warning, anything else or a transport error
//     critical; default timeout 10 s; TCP: a connect within the timeout
//     (default 10 s) passes; script: exit 0 passing, 1 warning, other
//     critical, default timeout 30 s; docker: the script run in the
//     container through the Docker Engine API at $DOCKER_HOST (default its
//     unix socket), statuses as a script's, an unreachable engine or an
//     unknown, paused or stopped container critical with the reason as
//     output (docker.go; tenure bounds each run by the script timeout,
//     which Consul does not).
//
// Not supported, and why: UDP, GRPC, H2PING, alias and OSService checks are
// refused with a 400 "Invalid check: … not supported" (their fields still
// decode, so the reason is precise). tenure's clients (Vault, consul/api,
// consul-template) register TTL, HTTP and TCP checks; the other kinds need
// protocol stacks (gRPC health, HTTP/2 ping), the state of other checks or
// a service manager this reference implementation does not carry.
// Namespace and Partition are accepted and ignored (tenure has no
// Enterprise tenancy). Token is read only from a config file's check, as
// Consul's agent reads it; a registration through the API keeps the
// request's token instead (impl/internal/local). Check state is not
// persisted by this package; the agent keeps it (impl/internal/local).
package checks
