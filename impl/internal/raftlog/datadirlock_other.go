//go:build !unix

package raftlog

import (
	"fmt"
	"os"
)

// dataDirLock is a no-op where flock is unavailable: there, keeping two
// servers off one directory is the operator's job.
type dataDirLock struct{}

func lockDataDir(dir string) (*dataDirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	return &dataDirLock{}, nil
}

// Close does nothing.
func (*dataDirLock) Close() error { return nil }
