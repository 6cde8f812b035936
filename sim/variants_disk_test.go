package sim

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/simdisk"
)

// Broken storage layers, for the teeth tests of the disk faults' checks:
// each stands between a server and its simulated disk.

// syncFS is a disk whose files' fsyncs go through sync instead: it gets
// the real fsync and returns what the server sees.
type syncFS struct {
	disk.FS
	sync func(real func() error) error
}

func (f syncFS) OpenFile(name string, flag int, perm fs.FileMode) (disk.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncFile{File: file, sync: f.sync}, nil
}

func (f syncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	file, err := f.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return syncWritable{WritableFile: file, sync: f.sync}, nil
}

func (f syncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	file, err := f.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return syncWritable{WritableFile: file, sync: f.sync}, nil
}

type syncFile struct {
	disk.File
	sync func(real func() error) error
}

func (f syncFile) Sync() error     { return f.sync(f.File.Sync) }
func (f syncFile) Datasync() error { return f.sync(f.File.Datasync) }

type syncWritable struct {
	types.WritableFile
	sync func(real func() error) error
}

func (f syncWritable) Sync() error { return f.sync(f.WritableFile.Sync) }

// fsyncLies: the server's storage never really fsyncs (a disk cache that
// ignores flushes, or fsync turned off for speed) while telling raft it
// did. A power loss of every server then takes acknowledged writes with
// it.
var fsyncLies = &core.Variant{Name: "fsync-lies", Disk: func(_ string, d *simdisk.Disk) disk.FS {
	return syncFS{FS: d, sync: func(func() error) error { return nil }}
}}

// logFsyncLies: the servers' storage lies about the fsyncs of the raft
// log's segments only (its metadata stays honest), as a log written with
// the fsync turned off for speed. After every server loses power the
// cluster comes back on shorter logs, without writes it had acknowledged.
var logFsyncLies = &core.Variant{Name: "log-fsync-lies", Disk: func(_ string, d *simdisk.Disk) disk.FS {
	return walLies{FS: d}
}}

// walLies lies about the fsyncs of raft-wal's segment files (*.wal),
// however they are opened; everything else is d's.
type walLies struct{ disk.FS }

func (f walLies) OpenFile(name string, flag int, perm fs.FileMode) (disk.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".wal") {
		return file, err
	}
	return syncFile{File: file, sync: func(func() error) error { return nil }}, nil
}

func (f walLies) Create(dir, name string, size uint64) (types.WritableFile, error) {
	file, err := f.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return syncWritable{WritableFile: file, sync: func(func() error) error { return nil }}, nil
}

func (f walLies) OpenWriter(dir, name string) (types.WritableFile, error) {
	file, err := f.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return syncWritable{WritableFile: file, sync: func(func() error) error { return nil }}, nil
}

// fsyncErrorsIgnored: the server's storage swallows a failed fsync and
// carries on (PostgreSQL's old "retry the fsync" bug), so the server never
// learns that its log is not on disk.
var fsyncErrorsIgnored = &core.Variant{Name: "fsync-errors-ignored", Disk: func(_ string, d *simdisk.Disk) disk.FS {
	return syncFS{FS: d, sync: func(real func() error) error {
		_ = real()
		return nil
	}}
}}

// pidFileLock: the data directory is locked with a lock file, made durable
// when taken and removed (without an fsync of the directory) when the
// server shuts down, instead of a lock the OS drops with the process. A
// crash keeps the removal in the page cache; a power loss undoes it, and
// the server then finds its directory "in use" and never starts again.
var pidFileLock = &core.Variant{Name: "pid-file-lock", Disk: func(_ string, d *simdisk.Disk) disk.FS {
	return pidLockFS{FS: d}
}}

type pidLockFS struct{ disk.FS }

var errDirInUse = errors.New("data directory in use (lock file present)")

func (f pidLockFS) Lock(name string) (io.Closer, error) {
	pid := name + ".pid"
	if _, err := f.Stat(pid); err == nil {
		return nil, errDirInUse
	}
	file, err := f.OpenFile(pid, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = errors.Join(file.Sync(), file.Close(), syncDir(f.FS, path.Dir(pid)))
	if err != nil {
		return nil, err
	}
	return &pidLock{fs: f.FS, pid: pid}, nil
}

type pidLock struct {
	fs   disk.FS
	pid  string
	once sync.Once
}

func (l *pidLock) Close() error {
	var err error
	l.once.Do(func() { err = l.fs.Remove(l.pid) })
	return err
}

func syncDir(d disk.FS, dir string) error {
	f, err := d.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
