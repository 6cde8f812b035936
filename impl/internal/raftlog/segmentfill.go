package raftlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
)

// zeroedVFS gives raft-wal log segments whose every block is already
// written. raft-wal preallocates a segment with fallocate, which leaves
// "unwritten" extents: an append that reaches a new block converts it to
// written, so that fsync also commits a metadata change to the file
// system's journal. On a zero-filled file an append only overwrites data,
// and fdatasync suffices. BenchmarkLogStore, side by side on this project's
// ext4 disk: an append of 64 entries plus sync took 241 µs fallocated and
// 171 µs zero-filled (medians of 6), one entry 131 µs and 121 µs. The sync
// is on every commit's path, on the leader and on a follower.
//
// Zero-filling a 64 MiB segment takes ~45 ms, so it is not done when raft-wal
// rotates (it holds its write lock then): once the tail segment is half
// written, the next one is prepared in the background under a name raft-wal
// ignores, and the next Create moves it into place. Only a log's first
// segment is filled on the spot.
//
// The spare is written a chunk at a time, each chunk synced and followed by
// a pause. Written in one burst and synced once, its 64 MiB went to the disk
// together while the log's own fdatasyncs waited behind them: a p99 of tens
// of milliseconds for half a second at 64 clients (BenchmarkAppendBesideSpare
// has the side-by-side figures).
type zeroedVFS struct {
	// FS holds the segments; its own segment files serve raft-wal's reads,
	// listings and deletions.
	disk.FS
	// logger hears of a failed preparation: the next rotation then fills
	// its segment on the spot, 45 ms under raft-wal's write lock.
	logger hclog.Logger

	mu        sync.Mutex
	preparing bool
	closed    bool
	done      sync.WaitGroup
	prepErr   error // the last background preparation's failure, if any
}

// spareName is the prepared next segment; raft-wal lists only *.wal files.
const spareName = "next-segment.zeroed"

func (v *zeroedVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	path := filepath.Join(dir, name)
	if size > 0 && v.takeSpare(dir, path, size) {
		f, err := v.FS.OpenFile(path, os.O_RDWR, 0o640)
		if err != nil {
			return nil, fmt.Errorf("open segment %s: %w", name, err)
		}
		return &zeroedFile{File: f, dir: dir, size: size, vfs: v}, nil
	}
	f, err := v.FS.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", name, err)
	}
	if err := zeroFill(f, size); err != nil {
		return nil, errors.Join(fmt.Errorf("zero-fill segment %s: %w", name, err), f.Close(), v.FS.Remove(path))
	}
	return &zeroedFile{File: f, dir: dir, size: size, vfs: v}, nil
}

func (v *zeroedVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.FS.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0o640)
	if err != nil {
		return nil, err
	}
	// A segment from before this process: its directory entry is durable,
	// and it may be a fallocated one, which datasync handles as well.
	zf := &zeroedFile{File: f, dir: dir, vfs: v}
	zf.dirSynced.Store(true)
	return zf, nil
}

// takeSpare moves a prepared segment of the given size to path.
func (v *zeroedVFS) takeSpare(dir, path string, size uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.preparing {
		return false
	}
	spare := filepath.Join(dir, spareName)
	fi, err := v.FS.Stat(spare)
	if err != nil || uint64(fi.Size()) != size {
		return false
	}
	// A link, unlike a rename, refuses an existing name, as the O_EXCL
	// create it stands in for does.
	if err := v.FS.Link(spare, path); err != nil {
		return false
	}
	return v.FS.Remove(spare) == nil
}

// prepare zero-fills the next segment in the background, once at a time.
func (v *zeroedVFS) prepare(dir string, size uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.preparing || v.closed {
		return
	}
	v.preparing = true
	v.done.Add(1)
	go func() {
		defer v.done.Done()
		err := prepareSpare(v.FS, dir, size, v.isClosed)
		if err != nil && !errors.Is(err, errSpareAbandoned) && v.logger != nil {
			v.logger.Warn("next log segment not prepared; the rotation will fill it", "error", err)
		}
		v.mu.Lock()
		v.preparing = false
		v.prepErr = err
		v.mu.Unlock()
	}()
}

func (v *zeroedVFS) isClosed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.closed
}

// Close waits for a preparation under way, which stops at its next chunk.
func (v *zeroedVFS) Close() error {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	v.done.Wait()
	return nil
}

// Pacing of a spare's preparation: a 64 MiB spare takes 64 chunks, each a
// write, an fdatasync and a pause, about a quarter of a second on this
// project's disk; a segment takes far longer than that to half fill.
const (
	spareChunk      = 1 << 20
	spareChunkPause = 2 * time.Millisecond
)

// errSpareAbandoned is a preparation stopped because the store closed.
var errSpareAbandoned = errors.New("spare segment abandoned: the log store closed")

// prepareSpare writes a zero-filled, synced file of size bytes and then
// gives it the spare's name, so a spare is never half written. It gives up
// between chunks once stopped says so.
func prepareSpare(d disk.FS, dir string, size uint64, stopped func() bool) error {
	spare := filepath.Join(dir, spareName)
	if fi, err := d.Stat(spare); err == nil && uint64(fi.Size()) == size {
		return nil
	}
	tmp := spare + ".tmp"
	f, err := d.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o640)
	if err != nil {
		return fmt.Errorf("create spare segment: %w", err)
	}
	err = zeroFillPaced(f, size, stopped)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, spare)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("prepare spare segment: %w", err), d.Remove(tmp))
	}
	return syncPath(d, dir)
}

// zeroFillPaced zero-fills f a chunk at a time, syncing each chunk and
// pausing after it, so that the disk never has more than one chunk of it
// queued ahead of the log's own syncs.
func zeroFillPaced(f disk.File, size uint64, stopped func() bool) error {
	buf := make([]byte, spareChunk)
	for off := uint64(0); off < size; off += spareChunk {
		if stopped != nil && stopped() {
			return errSpareAbandoned
		}
		n := min(spareChunk, size-off)
		if _, err := f.WriteAt(buf[:n], int64(off)); err != nil {
			return err
		}
		if err := f.Datasync(); err != nil {
			return err
		}
		if off+n < size {
			time.Sleep(spareChunkPause)
		}
	}
	return nil
}

// removeUnfinishedSpare deletes, at open, the temporary file of a
// preparation that a crash cut short (it would otherwise hold up to a
// segment of disk until the next preparation, and be fsynced at every start
// before that), and the spare itself. A crash or power loss between the
// link that moves the spare into place and the removal of its old name
// (takeSpare) leaves the spare's name on the segment raft-wal now writes:
// the next rotation would take it again, and write the next segment's
// header over that one (raft-wal: "segment header ID doesn't match
// metadata"; found by the torn power-loss test). A spare is only ever a
// head start; the next rotation prepares another.
func removeUnfinishedSpare(d disk.FS, dir string) error {
	for _, name := range []string{spareName + ".tmp", spareName} {
		err := d.Remove(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove a spare segment left from before: %w", err)
		}
	}
	return nil
}

func zeroFill(f io.WriterAt, size uint64) error {
	buf := make([]byte, spareChunk)
	for off := uint64(0); off < size; off += uint64(len(buf)) {
		n := min(uint64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], int64(off)); err != nil {
			return err
		}
	}
	return nil
}

// syncPath fsyncs a file or a directory, as os.Open and Sync would.
func syncPath(d disk.FS, path string) error {
	f, err := d.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// zeroedFile is a segment file synced with fdatasync where there is one:
// its size never changes after the fill, so the inode's other metadata
// need not be written on each commit.
type zeroedFile struct {
	disk.File
	dir       string
	dirSynced atomic.Bool // whether the directory entry is known durable
	size      uint64      // 0 for a file opened rather than created
	vfs       *zeroedVFS
	kicked    atomic.Bool
}

func (f *zeroedFile) WriteAt(p []byte, off int64) (int, error) {
	if f.size > 0 && uint64(off)+uint64(len(p)) > f.size/2 && !f.kicked.Swap(true) {
		f.vfs.prepare(f.dir, f.size)
	}
	return f.File.WriteAt(p, off)
}

func (f *zeroedFile) Sync() error {
	if err := f.File.Datasync(); err != nil {
		return err
	}
	if !f.dirSynced.Load() {
		// The first sync of a new or renamed segment also makes its name
		// durable, as raft-wal's own file does.
		if err := syncPath(f.vfs.FS, f.dir); err != nil {
			return err
		}
		f.dirSynced.Store(true)
	}
	return nil
}
