package conformance

import "github.com/tenurekv/tenure/impl/agent/agenttest"

// With no -addr, `go test ./spec/conformance` (and so `make test`) runs the
// suite and the mutant check against an in-process tenure dev agent.
func init() { StartDev = agenttest.StartDev }
