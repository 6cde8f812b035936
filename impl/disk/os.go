package disk

import (
	"io/fs"
	"os"

	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// OS is the real file system: package os, raft-wal's fs package for
// segment files, fdatasync on Linux and flock for Lock.
type OS struct{}

var _ FS = OS{}

// walFS is raft-wal's own file system; it keeps no state.
var walFS = walfs.New()

func (OS) ListDir(dir string) ([]string, error) { return walFS.ListDir(dir) }

func (OS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	return walFS.Create(dir, name, size)
}

func (OS) Delete(dir, name string) error { return walFS.Delete(dir, name) }

func (OS) OpenReader(dir, name string) (types.ReadableFile, error) {
	return walFS.OpenReader(dir, name)
}

func (OS) OpenWriter(dir, name string) (types.WritableFile, error) {
	return walFS.OpenWriter(dir, name)
}

func (OS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (OS) Link(oldname, newname string) error         { return os.Link(oldname, newname) }
func (OS) Rename(oldname, newname string) error       { return os.Rename(oldname, newname) }
func (OS) Remove(name string) error                   { return os.Remove(name) }
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// osFile is an *os.File with Datasync.
type osFile struct{ *os.File }

func (f osFile) Datasync() error { return Fdatasync(f.File) }
