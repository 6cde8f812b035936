package raftlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
)

// LogSync lets the leader send new entries to its followers while its own
// fsync of them is still running. hashicorp/raft writes the leader's log
// before it replicates, so with a log store that fsyncs inside StoreLogs a
// commit costs two fsyncs one after the other: the leader's, then a
// follower's. Raft only needs a committed entry on a majority of disks, not
// the leader's disk first (etcd's raft overlaps the two the same way).
//
// On the leader, the raft-wal segment's fsync inside StoreLogs is deferred to
// a background flush, and three guards keep every entry that anyone can
// observe on a majority of disks, for kill -9 and for power loss alike:
//
//   - apply gate: the FSM applies an entry only once this server's own copy
//     is durable (await). Acks, reads, blocking queries, snapshots and the
//     leader's own decisions all come from applied state, so none of them
//     runs ahead of the disk. A commit already counts a follower whose
//     AppendEntries reply came after its fsync.
//   - commit clamp: the commit index sent to followers never passes the
//     leader's durable index (commitClamp), so no follower applies an entry
//     that only its own disk holds.
//   - order: a follower's StoreLogs, any DeleteRange and every raft-wal
//     metadata commit (segment rotation, truncation, term and vote) first
//     flush the deferred syncs, so the files never describe a state whose
//     log entries are not yet on disk.
//
// A failed fsync, deferred or in place, is not retried (the page cache may
// already have dropped the dirty pages, so a later success would prove
// nothing): every later write fails, await reports it and the server
// stops, as etcd and PostgreSQL do.
type LogSync struct {
	// leader reports whether the caller of StoreLogs is the leader; raft
	// only calls StoreLogs from its own run loop, whose state it reads.
	leader atomic.Pointer[func() bool]
	// deferring is set while the leader's StoreLogs runs, so that the
	// segment writer's Sync inside it only marks its file dirty.
	deferring atomic.Bool
	// deferrals counts the leader's writes whose fsync was deferred.
	deferrals atomic.Uint64

	mu      sync.Mutex
	dirty   map[*syncedFile]struct{} // files with a deferred Sync
	written uint64                   // last index handed to the store
	// truncations counts deleted log tails, so that a flush that began
	// before one does not count entries that are gone.
	truncations uint64
	durable     atomic.Uint64 // written under mu

	// flushing makes flushes one at a time: a one-slot channel rather than
	// a sync.Mutex because a flush holds it across fsyncs, and inside a
	// synctest bubble (the simulator) a goroutine waiting on a mutex is not
	// durably blocked: an fsync that sleeps on virtual time (simdisk's slow
	// disk) would then stop the bubble's clock for good.
	flushing chan struct{}

	waitMu   sync.Mutex
	advanced chan struct{} // closed and replaced when durable grows or failed is set
	failed   error
	// failedCh is closed when failed is set.
	failedCh chan struct{}

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// newLogSync returns a LogSync with nothing durable yet (the store opening
// it reports what is, with synced), and a flusher in the background unless
// background is false (tests flush by hand to see each step).
func newLogSync(background bool) *LogSync {
	ls := &LogSync{
		dirty:    make(map[*syncedFile]struct{}),
		flushing: make(chan struct{}, 1),
		advanced: make(chan struct{}),
		failedCh: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if background {
		go ls.run()
	} else {
		close(ls.done)
	}
	return ls
}

// SetLeader tells LogSync how to recognise the leader's writes. Until it is
// called every write is synced in place.
func (ls *LogSync) SetLeader(isLeader func() bool) { ls.leader.Store(&isLeader) }

func (ls *LogSync) isLeader() bool {
	f := ls.leader.Load()
	return f != nil && (*f)()
}

func (ls *LogSync) run() {
	defer close(ls.done)
	for {
		select {
		case <-ls.kick:
			// A failure is kept in ls.failed and reported by await.
			_ = ls.flush()
		case <-ls.stop:
			return
		}
	}
}

// Close stops the flusher after one last flush.
func (ls *LogSync) Close() error {
	close(ls.stop)
	<-ls.done
	return ls.flush()
}

// markDirty records a Sync the leader's StoreLogs deferred.
func (ls *LogSync) markDirty(f *syncedFile) {
	ls.mu.Lock()
	ls.dirty[f] = struct{}{}
	ls.mu.Unlock()
}

// wrote records that entries up to last were handed to the store, their
// Syncs deferred, and wakes the flusher.
func (ls *LogSync) wrote(last uint64) {
	ls.mu.Lock()
	ls.written = max(ls.written, last)
	ls.mu.Unlock()
	select {
	case ls.kick <- struct{}{}:
	default:
	}
}

// flush syncs every file with a deferred Sync and then declares durable
// what had been written before it looked. The set of files and the index
// are taken together, so each entry counted was written before its file's
// Sync was deferred, and so before the real Sync below.
func (ls *LogSync) flush() error {
	ls.flushing <- struct{}{}
	defer func() { <-ls.flushing }()
	if err := ls.err(); err != nil {
		return err
	}
	ls.mu.Lock()
	files, upTo, truncations := ls.dirty, ls.written, ls.truncations
	ls.dirty = make(map[*syncedFile]struct{})
	ls.mu.Unlock()
	if len(files) > 0 {
		// The leader's fsync left raft.leader.dispatchLog; it is timed here.
		defer metrics.MeasureSince([]string{"raft", "logsync", "flush"}, time.Now())
	}
	for f := range files {
		if err := f.WritableFile.Sync(); err != nil {
			err = fmt.Errorf("fsync raft log: %w", err)
			ls.setFailed(err)
			return err
		}
	}
	ls.mu.Lock()
	if truncations == ls.truncations {
		ls.advanceLocked(upTo)
	}
	ls.mu.Unlock()
	return nil
}

// advanceLocked raises the durable index to idx and wakes the waiters.
func (ls *LogSync) advanceLocked(idx uint64) {
	if idx <= ls.durable.Load() {
		return
	}
	ls.durable.Store(idx)
	ls.waitMu.Lock()
	close(ls.advanced)
	ls.advanced = make(chan struct{})
	ls.waitMu.Unlock()
}

// synced records entries up to last that were stored and synced in place.
func (ls *LogSync) synced(last uint64) {
	ls.mu.Lock()
	ls.written = max(ls.written, last)
	ls.advanceLocked(last)
	ls.mu.Unlock()
}

// truncated forgets durability from index first on, after the log's tail
// was deleted from there: entries written again at those indexes must be
// synced again before they count.
func (ls *LogSync) truncated(first uint64) {
	keep := max(first, 1) - 1 // raft's indexes start at 1
	ls.mu.Lock()
	ls.truncations++
	ls.written = min(ls.written, keep)
	ls.durable.Store(min(ls.durable.Load(), keep))
	ls.mu.Unlock()
}

func (ls *LogSync) setFailed(err error) {
	ls.waitMu.Lock()
	if ls.failed == nil {
		ls.failed = err
		close(ls.advanced)
		ls.advanced = make(chan struct{})
		close(ls.failedCh)
	}
	ls.waitMu.Unlock()
}

// Failed is closed once an fsync has failed; Err then says how. A server
// stops there, leader or follower: every later write would fail anyway.
func (ls *LogSync) Failed() <-chan struct{} { return ls.failedCh }

// Err is the fsync failure, nil while there has been none.
func (ls *LogSync) Err() error { return ls.err() }

func (ls *LogSync) err() error {
	ls.waitMu.Lock()
	defer ls.waitMu.Unlock()
	return ls.failed
}

// Await returns once entries up to idx are on this server's disk, or the
// fsync failure that means they never will be.
func (ls *LogSync) Await(idx uint64) error {
	for {
		// The channel is taken before the index is read: an advance after
		// the read closes this channel.
		ls.waitMu.Lock()
		ch, err := ls.advanced, ls.failed
		ls.waitMu.Unlock()
		if ls.durable.Load() >= idx {
			return nil
		}
		if err != nil {
			return err
		}
		<-ch
	}
}

// syncedLogStore is the raft.LogStore in front of raft-wal that chooses, per
// StoreLogs, between deferring the fsync (leader) and syncing in place.
type syncedLogStore struct {
	raft.LogStore
	ls *LogSync
}

func (s *syncedLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *syncedLogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	last := logs[len(logs)-1].Index
	if s.ls.isLeader() {
		if err := s.ls.err(); err != nil {
			return err
		}
		s.ls.deferring.Store(true)
		err := s.LogStore.StoreLogs(logs)
		s.ls.deferring.Store(false)
		if err != nil {
			return err
		}
		s.ls.deferrals.Add(1)
		s.ls.wrote(last)
		return nil
	}
	// A follower acknowledges what it stores, so its write is synced here,
	// after whatever it deferred as a leader.
	if err := s.ls.flush(); err != nil {
		return err
	}
	if err := s.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	s.ls.synced(last)
	return nil
}

func (s *syncedLogStore) DeleteRange(lo, hi uint64) error {
	if err := s.ls.flush(); err != nil {
		return err
	}
	last, err := s.LogStore.LastIndex()
	if err != nil {
		return err
	}
	if err := s.LogStore.DeleteRange(lo, hi); err != nil {
		return err
	}
	if hi >= last {
		s.ls.truncated(lo)
	}
	return nil
}

// IsMonotonic passes raft-wal's answer through: raft behaves differently
// after a snapshot restore when the store cannot have gaps.
func (s *syncedLogStore) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// syncedVFS hands raft-wal segment files whose Sync the leader can defer.
type syncedVFS struct {
	types.VFS
	ls *LogSync
}

func (v syncedVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := v.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &syncedFile{WritableFile: f, ls: v.ls}, nil
}

func (v syncedVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &syncedFile{WritableFile: f, ls: v.ls}, nil
}

type syncedFile struct {
	types.WritableFile
	ls *LogSync
}

// Sync is called by raft-wal's segment writer once per append, after the
// append's writes.
func (f *syncedFile) Sync() error {
	if f.ls.deferring.Load() {
		f.ls.markDirty(f)
		return nil
	}
	if err := f.WritableFile.Sync(); err != nil {
		err = fmt.Errorf("fsync raft log: %w", err)
		f.ls.setFailed(err)
		return err
	}
	return nil
}

// Close keeps a deferred Sync from being lost with the handle.
func (f *syncedFile) Close() error {
	return errors.Join(f.ls.flush(), f.WritableFile.Close())
}

// syncedMeta orders raft-wal's metadata after the log data it describes.
type syncedMeta struct {
	types.MetaStore
	ls *LogSync
}

func (m syncedMeta) CommitState(st types.PersistentState) error {
	if err := m.ls.flush(); err != nil {
		return err
	}
	return m.MetaStore.CommitState(st)
}

func (m syncedMeta) SetStable(key, value []byte) error {
	if err := m.ls.flush(); err != nil {
		return err
	}
	return m.MetaStore.SetStable(key, value)
}

// syncFiles fsyncs every file in dir. A previous process may have been
// killed with deferred Syncs: its writes are in the page cache, readable
// but not yet on disk, and they must be before they count as durable.
func syncFiles(d disk.FS, dir string) error {
	entries, err := d.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list raft log directory: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := syncPath(d, filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("fsync %s: %w", e.Name(), err)
		}
	}
	return nil
}

// Deferrals counts the leader's writes whose fsync was deferred.
func (ls *LogSync) Deferrals() uint64 { return ls.deferrals.Load() }

// ClampCommits wraps raft's TCP transport so that the commit index it sends
// to followers never passes what ls has on disk. The leader may defer its
// fsyncs (SetLeader) only behind this transport.
func ClampCommits(nt *raft.NetworkTransport, ls *LogSync) raft.Transport {
	return &commitClamp{NetworkTransport: nt, durable: ls.durable.Load}
}

// commitClamp is raft's TCP transport with the commit index it sends to
// followers held at the leader's durable index (see LogSync).
type commitClamp struct {
	*raft.NetworkTransport
	durable func() uint64
}

func (c *commitClamp) clamp(args *raft.AppendEntriesRequest) *raft.AppendEntriesRequest {
	d := c.durable()
	if args.LeaderCommitIndex <= d {
		return args
	}
	clamped := *args
	clamped.LeaderCommitIndex = d
	return &clamped
}

func (c *commitClamp) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return c.NetworkTransport.AppendEntries(id, target, c.clamp(args), resp)
}

// AppendEntriesPipeline refuses, so raft replicates through AppendEntries
// above and every request is clamped. tenure's servers do not pipeline
// anyway (openServerPort); refusing here keeps the clamp whole even if that
// tuning changes.
func (c *commitClamp) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
