package raftlog

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
)

// Config says where a server's raft stores live. A store set here is used
// as it is and closed by its owner; Open makes the others.
type Config struct {
	// DataDir holds the raft log (DataDir/raft), the snapshots and the
	// directory lock; unused with Dev.
	DataDir string
	// Dev keeps everything in memory, as consul agent -dev does.
	Dev    bool
	Logger hclog.Logger
	// Disk holds DataDir; nil is the real disk (disk.OS). On any other
	// disk raft-wal's meta store and the snapshots are files of tenure's
	// own (filemeta.go, snapshots.go), as bbolt and raft's file snapshot
	// store work on the real one only.
	Disk disk.FS
	// SegmentSize, if set, replaces raft-wal's 64 MiB log segments (the
	// simulator uses small ones, so that short runs rotate).
	SegmentSize int

	LogStore      raft.LogStore
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore
}

// Stores are the raft log, stable and snapshot stores a server runs on, and
// whatever must be closed after raft has shut down.
type Stores struct {
	Logs   raft.LogStore
	Stable raft.StableStore
	Snaps  raft.SnapshotStore
	// Sync defers the leader's log fsyncs (logsync.go); nil unless the log
	// is tenure's own raft-wal.
	Sync    *LogSync
	closers []io.Closer
}

// Open fills in every store the config does not give.
//
// Durable mode uses raft-wal for the log and stable store. It was chosen by
// BenchmarkLogStore (logstore_bench_test.go) on the build machine: an
// fsynced append of one ~200-byte entry took 101 µs with raft-wal against
// 280 µs with raft-boltdb v1, and a 64-entry batch 211 µs against 482 µs.
// Snapshots go to raft's FileSnapshotStore under DataDir/snapshots.
func Open(c Config) (*Stores, error) {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.SegmentSize < 0 {
		return nil, fmt.Errorf("raft log segment size %d is negative", c.SegmentSize)
	}
	d := c.Disk
	if d == nil {
		d = disk.OS{}
	}
	st := &Stores{Logs: c.LogStore, Stable: c.StableStore, Snaps: c.SnapshotStore}
	if c.Dev {
		if st.Logs == nil || st.Stable == nil {
			mem := raft.NewInmemStore()
			if st.Logs == nil {
				st.Logs = mem
			}
			if st.Stable == nil {
				st.Stable = mem
			}
		}
		if st.Snaps == nil {
			st.Snaps = raft.NewInmemSnapshotStore()
		}
		return st, nil
	}
	if c.DataDir != "" {
		// Two servers on one directory would corrupt it; BoltDB would
		// instead make the second wait forever for its file lock.
		lock, err := lockDataDir(d, c.DataDir)
		if err != nil {
			return nil, err
		}
		st.closers = append(st.closers, lock)
	}
	if st.Logs == nil || st.Stable == nil {
		dir := filepath.Join(c.DataDir, "raft")
		if err := d.MkdirAll(dir, 0o750); err != nil {
			st.Close()
			return nil, fmt.Errorf("create raft log directory: %w", err)
		}
		// One log serves both: an injected store of either kind leaves the
		// other's part of it unused.
		dl, err := openDurableLog(dir, c.Logger.Named("wal"), durableLogOptions{disk: d, segmentSize: c.SegmentSize})
		if err != nil {
			st.Close()
			return nil, err
		}
		st.closers = append(st.closers, dl.closers...)
		if st.Logs == nil {
			st.Logs, st.Sync = dl.logs, dl.sync
		}
		if st.Stable == nil {
			st.Stable = dl.wal
		}
	}
	if st.Snaps == nil {
		var snaps raft.SnapshotStore
		var err error
		if isOS(d) {
			snaps, err = raft.NewFileSnapshotStoreWithLogger(c.DataDir, 2, c.Logger.Named("snapshot"))
		} else {
			snaps, err = newSnapshotStore(d, c.DataDir, 2)
		}
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("open snapshot store in %s: %w", c.DataDir, err)
		}
		st.Snaps = snaps
	}
	return st, nil
}

// Close closes the stores Open opened; given ones are the caller's.
func (st *Stores) Close() error {
	var first error
	for i := len(st.closers) - 1; i >= 0; i-- {
		if err := st.closers[i].Close(); err != nil && first == nil {
			first = fmt.Errorf("close raft store: %w", err)
		}
	}
	st.closers = nil
	return first
}

// durableLogOptions change how openDurableLog opens a log; all but disk and
// segmentSize are for tests only.
type durableLogOptions struct {
	// disk holds the log; nil is the real disk.
	disk disk.FS
	// wrapVFS stands between the zero-filled segment files and LogSync.
	wrapVFS func(types.VFS) types.VFS
	// segmentSize, if set, replaces raft-wal's default of 64 MiB.
	segmentSize int
	// wrapMeta stands between raft-wal and its meta store.
	wrapMeta func(types.MetaStore) types.MetaStore
	// manualFlush leaves the deferred fsyncs to the caller's LogSync.flush.
	manualFlush bool
}

// durableLog is tenure's own raft log: raft-wal on zero-filled segments,
// with the leader's fsyncs deferred by LogSync.
type durableLog struct {
	wal  *wal.WAL // also the stable store
	logs raft.LogStore
	sync *LogSync
	// closers close it, last first.
	closers []io.Closer
}

// openDurableLog opens (or creates) the raft log in dir.
func openDurableLog(dir string, logger hclog.Logger, o durableLogOptions) (*durableLog, error) {
	d := o.disk
	if d == nil {
		d = disk.OS{}
	}
	if err := removeUnfinishedSpare(d, dir); err != nil {
		return nil, err
	}
	// A process killed with fsyncs deferred left writes in the page cache.
	if err := syncFiles(d, dir); err != nil {
		return nil, err
	}
	dl := &durableLog{sync: newLogSync(!o.manualFlush)}
	zeroed := &zeroedVFS{FS: d, logger: logger}
	var vfs types.VFS = zeroed
	if o.wrapVFS != nil {
		vfs = o.wrapVFS(vfs)
	}
	// The meta store is owned here: raft-wal's Close closes it too, but a
	// failed Open does not, and the BoltDB file lock would then hang a
	// restart in the same process. A second Close does nothing. BoltDB
	// needs the real disk (it maps its file); elsewhere the metadata is a
	// file of tenure's own.
	var meta types.MetaStore = &metadb.BoltMetaDB{}
	if !isOS(d) {
		meta = &fileMeta{fs: d, lock: make(chan struct{}, 1)}
	}
	dl.closers = append(dl.closers, dl.sync, zeroed)
	metaStore := meta
	if o.wrapMeta != nil {
		metaStore = o.wrapMeta(meta)
	}
	if err := finishRotation(dir, metaStore, d); err != nil {
		return nil, errors.Join(err, meta.Close(), closeAll(dl.closers))
	}
	size := wal.DefaultSegmentSize
	if o.segmentSize > 0 {
		size = o.segmentSize
	}
	w, err := wal.Open(dir, wal.WithLogger(logger), wal.WithSegmentSize(size),
		wal.WithMetaStore(syncedMeta{MetaStore: metaStore, ls: dl.sync}),
		wal.WithSegmentFiler(segment.NewFiler(dir, syncedVFS{VFS: vfs, ls: dl.sync})))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open raft log in %s: %w", dir, err), meta.Close(), closeAll(dl.closers))
	}
	dl.wal = w
	// Closers run last first: the WAL, then its meta store. A rotation
	// still running in the background commits to the meta store, so
	// closing that first would crash it (TestLogClosesWALBeforeMetaStore).
	// The store is closed through its wrapper, if any, so tests see it.
	dl.closers = append(dl.closers, metaStore, w)
	last, err := w.LastIndex()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("raft log last index: %w", err), closeAll(dl.closers))
	}
	// syncFiles put everything already in the log on disk.
	dl.sync.synced(last)
	// The cache serves followers' catch-up reads of recent entries from
	// memory, as Consul does in front of its store.
	cached, err := raft.NewLogCache(512, w)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("raft log cache: %w", err), closeAll(dl.closers))
	}
	dl.logs = &syncedLogStore{LogStore: cached, ls: dl.sync}
	return dl, nil
}

// closeAll closes cs, last first, and joins their errors.
func closeAll(cs []io.Closer) error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		errs = append(errs, cs[i].Close())
	}
	return errors.Join(errs...)
}

// isOS reports whether d is the real disk, where production's stores run.
func isOS(d disk.FS) bool {
	_, ok := d.(disk.OS)
	return ok
}
