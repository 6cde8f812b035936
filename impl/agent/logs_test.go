package agent_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestAgentMonitor follows consul/api's own monitor tests: a monitor at
// DEBUG, plain or JSON, sees a line once a service is registered, on an
// agent with the binary's kind of logger (an intercept logger, here at
// ERROR so that only the monitor sees the lines) and on one without a
// logger; /v1/agent/host answers on both.
func TestAgentMonitor(t *testing.T) {
	quiet := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.Error, Output: io.Discard})
	for name, logger := range map[string]hclog.Logger{"intercept logger": quiet, "no logger": nil} {
		a := agenttest.StartDevAgent(t, func(c *agent.Config) { c.Server.Logger = logger })
		c := client(t, a.HTTPAddr())
		stop := make(chan struct{})
		defer close(stop)
		plain, err := c.Agent().Monitor("debug", stop, nil)
		if err != nil {
			t.Fatalf("%s: monitor: %v", name, err)
		}
		asJSON, err := c.Agent().MonitorJSON("debug", stop, nil)
		if err != nil {
			t.Fatalf("%s: monitor json: %v", name, err)
		}
		if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{Name: "redis"}); err != nil {
			t.Fatalf("%s: register: %v", name, err)
		}
		if line := <-plain; !strings.Contains(line, "[DEBUG]") && !strings.Contains(line, "[INFO]") {
			t.Errorf("%s: plain line %q", name, line)
		}
		var entry map[string]any
		if line := <-asJSON; json.Unmarshal([]byte(line), &entry) != nil {
			t.Errorf("%s: JSON line %q", name, line)
		}
		host, err := c.Agent().Host()
		if err != nil || host["CollectionTime"] == nil {
			t.Errorf("%s: host: %v %v", name, host, err)
		}
	}
}
