package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestAgentSelfIdentity: /v1/agent/self names the build (revision, date in
// RFC 3339; Consul's placeholder date when the binary has none) and has a
// DebugConfig with the agent's own addresses and the caller's settings, on
// server and client agents alike; the gossip address in it is one the
// agent can join itself on, as consul/api's join test does.
func TestAgentSelfIdentity(t *testing.T) {
	built := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.HTTP.Build = agent.BuildInfo{Revision: "0123abcd", Date: built}
		c.HTTP.DebugConfig = map[string]any{"Logging": map[string]any{"LogLevel": "INFO"}}
	})
	cl := agenttest.StartClient(t, "selfclient", srv)
	for _, tc := range []struct {
		name, addr, serf, rev, date string
		server                      bool
	}{
		{"server", srv.HTTPAddr(), srv.Members().Local().Addr(), "0123abcd", "2026-03-04T05:06:07Z", true},
		{"client", cl.HTTPAddr(), cl.Members().Local().Addr(), "", "1970-01-01T00:00:01Z", false},
	} {
		self, err := client(t, tc.addr).Agent().Self()
		if err != nil {
			t.Fatalf("%s: self: %v", tc.name, err)
		}
		cfg, debug := self["Config"], self["DebugConfig"]
		if cfg["Revision"] != tc.rev || cfg["BuildDate"] != tc.date || cfg["Server"] != tc.server || cfg["NodeID"] == "" {
			t.Errorf("%s: Config %v", tc.name, cfg)
		}
		if debug == nil || debug["SerfAdvertiseAddrLAN"] != "tcp://"+tc.serf || debug["ServerMode"] != tc.server ||
			debug["Revision"] != tc.rev || debug["NodeID"] != cfg["NodeID"] || !strings.HasPrefix(debug["HTTPAddrs"].([]any)[0].(string), "tcp://") {
			t.Errorf("%s: DebugConfig %v", tc.name, debug)
		}
		if tc.server {
			if logging, _ := debug["Logging"].(map[string]any); logging["LogLevel"] != "INFO" {
				t.Errorf("%s: the caller's settings are missing: %v", tc.name, debug)
			}
			if debug["BuildDate"] != "2026-03-04 05:06:07 +0000 UTC" {
				t.Errorf("%s: DebugConfig BuildDate %v", tc.name, debug["BuildDate"])
			}
		}
		addr := strings.TrimPrefix(debug["SerfAdvertiseAddrLAN"].(string), "tcp://")
		if err := client(t, tc.addr).Agent().Join(addr, false); err != nil {
			t.Errorf("%s: join itself at %s: %v", tc.name, addr, err)
		}
	}
}
