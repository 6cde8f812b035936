package raftlog

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tenurekv/tenure/impl/disk"
)

// dataDirLock holds an exclusive lock on DataDir/LOCK for the server's life
// (flock on the OS, which the kernel drops when the process dies, so a
// kill -9 leaves no stale lock; nothing where flock is unavailable).
type dataDirLock struct{ l io.Closer }

func lockDataDir(d disk.FS, dir string) (*dataDirLock, error) {
	if err := d.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	l, err := d.Lock(filepath.Join(dir, "LOCK"))
	if errors.Is(err, disk.ErrLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another tenure server", dir)
	}
	if err != nil {
		return nil, err
	}
	return &dataDirLock{l: l}, nil
}

// Close releases the lock.
func (l *dataDirLock) Close() error {
	if err := l.l.Close(); err != nil {
		return fmt.Errorf("release data directory lock: %w", err)
	}
	return nil
}
