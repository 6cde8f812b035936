package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-uuid"
)

// TestNodeIDIsKeptInTheDataDir: the first start makes an ID and keeps it,
// the next start reads the same one back, and -node-id wins over the file.
func TestNodeIDIsKeptInTheDataDir(t *testing.T) {
	dir := t.TempDir()
	first := settings{DataDir: filepath.Join(dir, "data")} // not created yet: the agent makes it
	if err := first.resolveNodeID(); err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.ParseUUID(first.NodeID); err != nil {
		t.Fatalf("made node ID %q: %v", first.NodeID, err)
	}
	raw, err := os.ReadFile(filepath.Join(first.DataDir, nodeIDFile))
	if err != nil || string(raw) != first.NodeID {
		t.Fatalf("kept node ID %q (%v), want %q", raw, err, first.NodeID)
	}
	again := settings{DataDir: first.DataDir}
	if err := again.resolveNodeID(); err != nil || again.NodeID != first.NodeID {
		t.Fatalf("restart read node ID %q (%v), want %q", again.NodeID, err, first.NodeID)
	}
	given := settings{DataDir: first.DataDir, NodeID: "ABCDEF01-2345-6789-ABCD-EF0123456789"}
	if err := given.resolveNodeID(); err != nil || given.NodeID != "abcdef01-2345-6789-abcd-ef0123456789" {
		t.Fatalf("-node-id gave %q (%v), want it lowercased", given.NodeID, err)
	}
	entries, _ := os.ReadDir(first.DataDir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only %s (no temporary file left)", len(entries), nodeIDFile)
	}
}

// TestNodeIDRefusesBadInput: a -node-id or a kept file that is not a UUID
// stops the agent with a reason, and the file is not replaced.
func TestNodeIDRefusesBadInput(t *testing.T) {
	bad := settings{NodeID: "not-a-uuid"}
	if err := bad.resolveNodeID(); err == nil || !strings.Contains(err.Error(), "is not a UUID") {
		t.Errorf("-node-id not-a-uuid: got %v, want a refusal", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, nodeIDFile)
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kept := settings{DataDir: dir}
	if err := kept.resolveNodeID(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt %s: got %v, want a refusal naming the file", nodeIDFile, err)
	}
	if raw, _ := os.ReadFile(path); string(raw) != "garbage\n" {
		t.Errorf("the corrupt file was replaced with %q", raw)
	}
	dev := settings{Dev: true}
	if err := dev.resolveNodeID(); err != nil || dev.NodeID == "" {
		t.Errorf("dev mode: node ID %q, %v", dev.NodeID, err)
	}
}
