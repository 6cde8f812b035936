// Package disk is the file system a server's durable raft storage runs on
// (impl/internal/raftlog): the real one (OS) in production, and an
// in-memory one that can lose power in the simulator (sim/simdisk). Its
// types use only the standard library and raft-wal's public types, so a
// file system in another package can satisfy them.
package disk

import (
	"errors"
	"io"
	"io/fs"

	"github.com/hashicorp/raft-wal/types"
)

// FS is every file-system operation raftlog makes.
//
// The embedded types.VFS is what raft-wal's segment layer uses, with the
// semantics of raft-wal's own fs package: Create makes a new file (refusing
// an existing name) preallocated to size and whose first Sync also syncs
// its directory, Delete removes a file and syncs its directory, ListDir
// names a directory's files.
//
// The other methods mirror package os. Paths are slash-separated.
type FS interface {
	types.VFS

	// MkdirAll is os.MkdirAll.
	MkdirAll(path string, perm fs.FileMode) error
	// OpenFile is os.OpenFile with O_RDONLY, O_RDWR, O_CREATE, O_EXCL and
	// O_TRUNC. A directory opened read-only can be synced, which makes its
	// entries (creations, renames, links, removals) durable.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Stat is os.Stat.
	Stat(name string) (fs.FileInfo, error)
	// Link is os.Link: it refuses an existing newname.
	Link(oldname, newname string) error
	// Rename is os.Rename: it replaces an existing newname.
	Rename(oldname, newname string) error
	// Remove is os.Remove.
	Remove(name string) error
	// ReadDir is os.ReadDir: entries sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Lock takes an exclusive lock named by the file name (created if
	// need be) until the closer is closed or the process ends. A lock held
	// elsewhere fails at once with an error wrapping ErrLocked.
	Lock(name string) (io.Closer, error)
}

// File is an open file.
type File interface {
	// Sync (fsync) makes the file's data and metadata durable.
	types.WritableFile
	// Datasync (fdatasync where there is one) makes the data durable and
	// the metadata needed to read it back.
	Datasync() error
}

// ErrLocked is a lock that another holder has.
var ErrLocked = errors.New("locked by another holder")
