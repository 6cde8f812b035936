package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// buildTenure builds this package's binary into dir, for the tests and
// benchmarks that run tenure as real processes.
func buildTenure(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "tenure")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
