package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestBootstrapModeElectsItself: a server started from sdk/testutil's
// config file (bootstrap: true, server: true, no one to join) forms a
// cluster of itself, elects itself and names itself at /v1/status/leader,
// as Consul's bootstrap mode does; restarted on the same data dir it
// comes back as leader from its raft data.
func TestBootstrapModeElectsItself(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	var ports []string
	for round := range 2 {
		// The restart keeps the ports, so that the raft data's address
		// of this server is still its own.
		var ra runningAgent
		ra, ports = startFromSDKConfig(t, dataDir, ports)
		want := "127.0.0.1:" + ports[1]
		deadline := time.Now().Add(20 * time.Second)
		var leader string
		for leader != want && time.Now().Before(deadline) {
			leader = statusLeader(t, ra.HTTPAddr())
			if leader != want {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if err := ra.Shutdown(); err != nil {
			t.Error(err)
		}
		if leader != want {
			t.Fatalf("round %d: /v1/status/leader is %q after 20s, want this server %q", round, leader, want)
		}
	}
}

// startFromSDKConfig starts an agent in process from sdk/testutil's config
// file on the given ports, or else on free loopback ports (trying again on
// fresh ones if another process took one in between); it returns the
// agent and its ports (sdkTestServerConfig's order).
func startFromSDKConfig(t *testing.T, dataDir string, fixed []string) (runningAgent, []string) {
	t.Helper()
	var lastErr error
	for range 3 {
		ports := fixed
		if ports == nil {
			ports = freeLoopbackPorts(t, 8)
		}
		path := configWriter(t, t.TempDir())("config.json", sdkTestServerConfig(dataDir, ports))
		s, _, err := settingsFrom(t, "-config-file", path)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := s.start(hclog.NewNullLogger())
		if err == nil {
			return ra, ports
		}
		lastErr = err
		if fixed != nil {
			break
		}
	}
	t.Fatalf("start an agent from sdk/testutil's config: %v", lastErr)
	return nil, nil
}

// statusLeader is GET /v1/status/leader's answer ("" until there is one,
// or while the API does not answer).
func statusLeader(t *testing.T, httpAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/v1/status/leader")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	var leader string
	if err := json.Unmarshal(body, &leader); err != nil {
		t.Fatalf("/v1/status/leader answered %q: %v", body, err)
	}
	return leader
}
