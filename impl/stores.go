package impl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
)

// stores are the raft log, stable and snapshot stores a server runs on, and
// whatever must be closed after raft has shut down.
type stores struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	// sync defers the leader's log fsyncs (logsync.go); nil unless the log
	// is tenure's own raft-wal.
	sync    *logSync
	closers []io.Closer
}

// openStores fills in every store the config does not inject.
//
// Durable mode uses raft-wal for the log and stable store. It was chosen by
// BenchmarkLogStore (logstore_bench_test.go) on the build machine: an
// fsynced append of one ~200-byte entry took 101 µs with raft-wal against
// 280 µs with raft-boltdb v1, and a 64-entry batch 211 µs against 482 µs.
// Snapshots go to raft's FileSnapshotStore under DataDir/snapshots.
func openStores(c Config) (*stores, error) {
	st := &stores{logs: c.LogStore, stable: c.StableStore, snaps: c.SnapshotStore}
	if c.Dev {
		if st.logs == nil || st.stable == nil {
			mem := raft.NewInmemStore()
			if st.logs == nil {
				st.logs = mem
			}
			if st.stable == nil {
				st.stable = mem
			}
		}
		if st.snaps == nil {
			st.snaps = raft.NewInmemSnapshotStore()
		}
		return st, nil
	}
	if c.DataDir != "" {
		// Two servers on one directory would corrupt it; BoltDB would
		// instead make the second wait forever for its file lock.
		lock, err := lockDataDir(c.DataDir)
		if err != nil {
			return nil, err
		}
		st.closers = append(st.closers, lock)
	}
	if st.logs == nil || st.stable == nil {
		dir := filepath.Join(c.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			st.close()
			return nil, fmt.Errorf("create raft log directory: %w", err)
		}
		// raft-wal's Close leaves its BoltDB meta store (and that file's
		// lock) open, so a restart in the same process would hang: own it
		// and close it after the WAL.
		meta := &metadb.BoltMetaDB{}
		logger := wal.WithLogger(c.Logger.Named("wal"))
		var w *wal.WAL
		var err error
		if st.logs == nil {
			if err := syncFiles(dir); err != nil {
				st.close()
				return nil, err
			}
			st.sync = newLogSync(true)
			zeroed := &zeroedVFS{VFS: fs.New(), logger: c.Logger.Named("wal")}
			st.closers = append(st.closers, st.sync, zeroed)
			w, err = wal.Open(dir, logger,
				wal.WithMetaStore(syncedMeta{MetaStore: meta, ls: st.sync}),
				wal.WithSegmentFiler(segment.NewFiler(dir, syncedVFS{VFS: zeroed, ls: st.sync})))
		} else {
			w, err = wal.Open(dir, logger, wal.WithMetaStore(meta))
		}
		if err != nil {
			st.close()
			return nil, errors.Join(fmt.Errorf("open raft log in %s: %w", dir, err), meta.Close())
		}
		st.closers = append(st.closers, w, meta)
		if st.logs == nil {
			last, err := w.LastIndex()
			if err != nil {
				st.close()
				return nil, fmt.Errorf("raft log last index: %w", err)
			}
			// syncFiles put everything already in the log on disk.
			st.sync.synced(last)
			// The cache serves followers' catch-up reads of recent entries
			// from memory, as Consul does in front of its store.
			cached, err := raft.NewLogCache(512, w)
			if err != nil {
				st.close()
				return nil, fmt.Errorf("raft log cache: %w", err)
			}
			st.logs = &syncedLogStore{LogStore: cached, ls: st.sync}
		}
		if st.stable == nil {
			st.stable = w
		}
	}
	if st.snaps == nil {
		snaps, err := raft.NewFileSnapshotStoreWithLogger(c.DataDir, 2, c.Logger.Named("snapshot"))
		if err != nil {
			st.close()
			return nil, fmt.Errorf("open snapshot store in %s: %w", c.DataDir, err)
		}
		st.snaps = snaps
	}
	return st, nil
}

// close closes the stores tenure opened; injected ones are the caller's.
func (st *stores) close() error {
	var first error
	for i := len(st.closers) - 1; i >= 0; i-- {
		if err := st.closers[i].Close(); err != nil && first == nil {
			first = fmt.Errorf("close raft store: %w", err)
		}
	}
	st.closers = nil
	return first
}
