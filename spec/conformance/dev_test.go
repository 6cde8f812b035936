package conformance

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-uuid"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/internal/proccluster"
)

// With no -addr, `go test ./spec/conformance` (and so `make test`) runs the
// suite and the mutant check against an in-process tenure dev agent. It reaps
// deletions after one second, so the S52 case can watch a reap happen.
func init() {
	startDev = func(tb testing.TB) string {
		sink, err := devTelemetry()
		if err != nil {
			tb.Fatal(err)
		}
		a := agenttest.StartDevAgent(tb, func(c *agent.Config) {
			c.Server.ReapWindow = time.Second
			c.Server.ReapInterval = 250 * time.Millisecond
			c.Telemetry = sink // the S67 metrics case reads it
			// Coordinates written every 100 ms, as by tenure -dev (S89).
			c.Server.CoordinateUpdatePeriod = 100 * time.Millisecond
		})
		return "http://" + a.HTTPAddr()
	}
	// The in-process agent's reap window plus two intervals.
	devReapWait = 2 * time.Second
	// The ACL profile's server: ACLs on, deny by default, and a management
	// token written at the start of the agent's term (S87).
	startDevACL = func(tb testing.TB) (string, string) {
		token, err := uuid.GenerateUUID()
		if err != nil {
			tb.Fatal(err)
		}
		a := agenttest.StartDevAgent(tb, func(c *agent.Config) {
			c.ACL = agent.ACLConfig{Enabled: true, DefaultPolicy: "deny", Tokens: map[string]string{"initial_management": token}}
			c.Server.CoordinateUpdatePeriod = 100 * time.Millisecond
		})
		return "http://" + a.HTTPAddr(), token
	}
	// The S53 cases kill and stop agents, so they need processes: a tenure
	// binary built for this run, once for the suite and the mutant check.
	devAgent = func(tb testing.TB) string { return proccluster.BuildTenure(tb) }
}

// The process's metrics sink, as the binary keeps one: go-metrics'
// registry is global, so the dev agents of a run share it.
var (
	telemetryOnce sync.Once
	telemetry     *agent.MemSink
	telemetryErr  error
)

func devTelemetry() (*agent.MemSink, error) {
	telemetryOnce.Do(func() { telemetry, telemetryErr = agent.NewTelemetry(agent.TelemetryOptions{}) })
	return telemetry, telemetryErr
}

// TestMain removes the binary devAgent builds and stops the telemetry.
func TestMain(m *testing.M) {
	code := proccluster.Main(m)
	if telemetry != nil {
		telemetry.Stop()
	}
	os.Exit(code)
}
