//go:build unix

package raftlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dataDirLock holds an exclusive flock on DataDir/LOCK for the server's life.
// The kernel drops it when the process dies, so a kill -9 leaves no stale lock.
type dataDirLock struct{ f *os.File }

func lockDataDir(dir string) (*dataDirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another tenure server", dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &dataDirLock{f: f}, nil
}

// Close releases the lock.
func (l *dataDirLock) Close() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("release data directory lock: %w", err)
	}
	return nil
}
