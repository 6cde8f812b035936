package gossip

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartOptions: a pool without Timing or an encrypt key starts on
// memberlist's own LAN timings; one with a valid key starts encrypted;
// DataDir keeps serf's snapshot in DataDir/serf, so that a restarted agent
// rejoins on its own; a DataDir that cannot hold that directory fails the
// start.
func TestStartOptions(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Config{NodeName: "snap", BindAddr: "127.0.0.1", DataDir: dir, EncryptKey: make([]byte, 16)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	if p.Local().Name != "snap" {
		t.Fatalf("local member %+v", p.Local())
	}
	if _, err := os.Stat(filepath.Join(dir, "serf", "local.snapshot")); err != nil {
		t.Fatalf("no serf snapshot under DataDir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Config{NodeName: "x", BindAddr: "127.0.0.1", DataDir: file}); err == nil || !strings.Contains(err.Error(), "gossip: ") {
		t.Fatalf("a DataDir that is a file: %v", err)
	}
}
