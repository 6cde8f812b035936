package main

import (
	"encoding/json"
	"testing"
)

// harnessConfig is what sdk/testutil v0.18.2 writes for makeClient (its
// ports and IDs shortened).
const harnessConfig = `{"node_name":"node-1","node_id":"1","performance":{"raft_multiplier":1},
"bootstrap":true,"server":true,"data_dir":"/tmp/x/data","segments":null,"disable_update_check":true,
"log_level":"debug","bind_addr":"127.0.0.1","addresses":{},"ports":{"dns":1,"http":23456,"https":3,
"serf_lan":4,"serf_wan":5,"server":6,"grpc":7,"grpc_tls":8},"acl":{"tokens":{}},
"connect":{"ca_config":{"cluster_id":"11111111-2222-3333-4444-555555555555"},"enabled":true},
"skip_leave_on_interrupt":true,"peering":{"enabled":true},"version":"0.1.0"}`

func decode(t *testing.T) map[string]any {
	t.Helper()
	cfg := map[string]any{}
	if err := json.Unmarshal([]byte(harnessConfig), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestNoWorkaroundsLeaveTheConfig(t *testing.T) {
	cfg := decode(t)
	front, err := applyWorkarounds(cfg, map[string]bool{})
	if err != nil || front != nil {
		t.Fatalf("front %v, err %v", front, err)
	}
	if cfg["version"] != "0.1.0" || cfg["bootstrap"] != true {
		t.Errorf("config changed: %v", cfg)
	}
}

func TestWorkarounds(t *testing.T) {
	cfg := decode(t)
	w, err := parseWorkarounds("version,bootstrap,connect")
	if err != nil {
		t.Fatal(err)
	}
	front, err := applyWorkarounds(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg["version"]; ok {
		t.Error("version kept")
	}
	if _, ok := cfg["bootstrap"]; ok || cfg["bootstrap_expect"] != 1 {
		t.Errorf("bootstrap %v, bootstrap_expect %v", cfg["bootstrap"], cfg["bootstrap_expect"])
	}
	if c := cfg["connect"].(map[string]any); len(c) != 1 || c["enabled"] != false {
		t.Errorf("connect %v", c)
	}
	inner := cfg["ports"].(map[string]any)["http"]
	if front == nil || front.outer != "127.0.0.1:23456" || inner == 23456.0 || front.inner == front.outer {
		t.Errorf("front %+v, agent's http port %v", front, inner)
	}
}

// TestConnectOffNeedsNoProxy: without Connect in the harness's config
// (makeClientWithoutConnect) the harness does not wait for a CA root, so
// the agent serves the harness's port itself.
func TestConnectOffNeedsNoProxy(t *testing.T) {
	cfg := decode(t)
	delete(cfg, "connect")
	front, err := applyWorkarounds(cfg, map[string]bool{"connect": true})
	if err != nil || front != nil {
		t.Errorf("front %v, err %v", front, err)
	}
	if cfg["ports"].(map[string]any)["http"] != 23456.0 {
		t.Error("http port moved")
	}
}

func TestParseWorkaroundsRejectsUnknown(t *testing.T) {
	if _, err := parseWorkarounds("version,acl"); err == nil {
		t.Error("an unknown workaround was accepted")
	}
	if w, err := parseWorkarounds("none"); err != nil || len(w) != 0 {
		t.Errorf("none: %v, %v", w, err)
	}
}
