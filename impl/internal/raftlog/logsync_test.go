package raftlog

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	metrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// recVFS is the real file system, recording for each segment file how far
// it was written and how far the last real fsync reached.
type recVFS struct {
	types.VFS
	mu       sync.Mutex
	files    []*recFile
	failSync error
	// onSync, if set, runs inside the next real fsync, once.
	onSync func()
}

func (v *recVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := v.VFS.Create(dir, name, size)
	return v.track(f, err)
}

func (v *recVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.VFS.OpenWriter(dir, name)
	return v.track(f, err)
}

func (v *recVFS) track(f types.WritableFile, err error) (types.WritableFile, error) {
	if err != nil {
		return nil, err
	}
	rf := &recFile{WritableFile: f, v: v}
	v.mu.Lock()
	v.files = append(v.files, rf)
	v.mu.Unlock()
	return rf, nil
}

// unsynced is how many written bytes no fsync has covered yet.
func (v *recVFS) unsynced() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	var n int64
	for _, f := range v.files {
		n += f.written - f.synced
	}
	return n
}

type recFile struct {
	types.WritableFile
	v               *recVFS
	written, synced int64
}

func (f *recFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	f.v.mu.Lock()
	f.written = max(f.written, off+int64(n))
	f.v.mu.Unlock()
	return n, err
}

func (f *recFile) Sync() error {
	f.v.mu.Lock()
	fail, hook := f.v.failSync, f.v.onSync
	f.v.onSync = nil
	f.v.mu.Unlock()
	if hook != nil {
		hook()
	}
	if fail != nil {
		return fail
	}
	if err := f.WritableFile.Sync(); err != nil {
		return err
	}
	f.v.mu.Lock()
	f.synced = f.written
	f.v.mu.Unlock()
	return nil
}

// recMeta records, at each metadata commit, how many log bytes were not
// yet on disk.
type recMeta struct {
	types.MetaStore
	rec     *recVFS
	mu      sync.Mutex
	commits []int64
}

func (m *recMeta) CommitState(st types.PersistentState) error {
	m.mu.Lock()
	m.commits = append(m.commits, m.rec.unsynced())
	m.mu.Unlock()
	return m.MetaStore.CommitState(st)
}

// syncedWAL is the production stack of logsync.go over a recording file
// system, flushed by hand.
type syncedWAL struct {
	wal    *wal.WAL
	store  *syncedLogStore
	ls     *LogSync
	rec    *recVFS
	meta   *recMeta
	leader bool
}

// flush runs one flush of the deferred fsyncs; an error fails the test.
func (sw *syncedWAL) flush(t *testing.T) {
	t.Helper()
	if err := sw.ls.flush(); err != nil {
		t.Fatal(err)
	}
}

// wantDurable fails the test unless the durable index is want; when says
// at which step.
func (sw *syncedWAL) wantDurable(t *testing.T, want uint64, when string) {
	t.Helper()
	if d := sw.ls.durable.Load(); d != want {
		t.Fatalf("durable index %d %s, want %d", d, when, want)
	}
}

func openSyncedWAL(t *testing.T, segmentSize int) *syncedWAL {
	t.Helper()
	dir := t.TempDir()
	sw := &syncedWAL{ls: newLogSync(false), rec: &recVFS{VFS: fs.New()}}
	bolt := &metadb.BoltMetaDB{}
	sw.meta = &recMeta{MetaStore: bolt, rec: sw.rec}
	if segmentSize == 0 {
		segmentSize = wal.DefaultSegmentSize
	}
	w, err := wal.Open(dir,
		wal.WithMetaStore(syncedMeta{MetaStore: sw.meta, ls: sw.ls}),
		wal.WithSegmentFiler(segment.NewFiler(dir, syncedVFS{VFS: sw.rec, ls: sw.ls})),
		wal.WithSegmentSize(segmentSize))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After an injected fsync failure, closing reports it again.
		if err := errors.Join(w.Close(), bolt.Close(), sw.ls.Close()); err != nil && sw.ls.err() == nil {
			t.Error(err)
		}
	})
	sw.ls.SetLeader(func() bool { return sw.leader })
	sw.wal = w
	sw.store = &syncedLogStore{LogStore: w, ls: sw.ls}
	return sw
}

func (sw *syncedWAL) write(t *testing.T, from, to uint64) {
	t.Helper()
	logs := make([]*raft.Log, 0, to-from+1)
	for i := from; i <= to; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d %0200d", i, i))})
	}
	if err := sw.store.StoreLogs(logs); err != nil {
		t.Fatalf("store %d..%d: %v", from, to, err)
	}
}

func TestLogSyncLeaderDefersItsFsync(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 3)
	if sw.rec.unsynced() == 0 {
		t.Fatal("the leader's StoreLogs fsynced in place")
	}
	sw.wantDurable(t, 0, "before any fsync")
	sw.flush(t)
	if n := sw.rec.unsynced(); n != 0 {
		t.Fatalf("%d bytes still unsynced after a flush", n)
	}
	sw.wantDurable(t, 3, "after the flush")
	if err := sw.ls.Await(3); err != nil {
		t.Fatal(err)
	}
}

func TestLogSyncFollowerSyncsInPlace(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 3)
	sw.leader = false
	sw.write(t, 4, 4)
	if n := sw.rec.unsynced(); n != 0 {
		t.Fatalf("a follower acknowledged entries with %d bytes not on disk", n)
	}
	sw.wantDurable(t, 4, "after the follower's in-place write")
}

// A segment that fills up is sealed inside the leader's StoreLogs and
// recorded in raft-wal's metadata afterwards: the record must not describe
// a segment whose end is not on disk.
func TestLogSyncMetadataFollowsLogData(t *testing.T) {
	sw := openSyncedWAL(t, 8<<10)
	sw.leader = true
	for i := uint64(1); i <= 200; i += 10 {
		sw.write(t, i, i+9)
	}
	sw.meta.mu.Lock()
	commits := sw.meta.commits
	sw.meta.mu.Unlock()
	if len(commits) < 3 {
		t.Fatalf("only %d metadata commits: the segments never rotated", len(commits))
	}
	for i, n := range commits {
		if n != 0 {
			t.Errorf("metadata commit %d came with %d log bytes not on disk", i, n)
		}
	}
}

func TestLogSyncTruncationForgetsDurability(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 5)
	sw.flush(t)
	sw.leader = false
	if err := sw.store.DeleteRange(4, 5); err != nil {
		t.Fatal(err)
	}
	sw.wantDurable(t, 3, "after deleting 4..5")
	sw.leader = true
	sw.write(t, 4, 4)
	sw.wantDurable(t, 3, "before the rewritten entry 4 was synced")
	sw.flush(t)
	sw.wantDurable(t, 4, "after the flush")
}

// Compacting the head of the log (after a snapshot) deletes nothing that
// could be written again: what is durable stays durable.
func TestLogSyncHeadCompactionKeepsDurability(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 10)
	sw.flush(t)
	if err := sw.store.DeleteRange(1, 5); err != nil {
		t.Fatal(err)
	}
	sw.wantDurable(t, 10, "after compacting 1..5 of 10")
}

// raft's term and vote go through raft-wal's metadata too: stored, and
// after the log data written before them.
func TestLogSyncStableStoreAfterLogData(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 3)
	if err := sw.wal.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if n := sw.rec.unsynced(); n != 0 {
		t.Fatalf("the term was stored with %d log bytes not on disk", n)
	}
	if v, err := sw.wal.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("term read back as %d, %v", v, err)
	}
}

// await blocks until a flush covers the index, and no longer.
func TestLogSyncAwaitWaitsForTheFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newLogSync(false)
		returned := make(chan error, 1)
		go func() { returned <- ls.Await(3) }()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("await(3) returned %v with nothing durable", err)
		default:
		}
		ls.wrote(3)
		if err := ls.flush(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case err := <-returned:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("await(3) still waits after entries up to 3 were flushed")
		}
		if err := ls.Await(3); err != nil {
			t.Fatal(err)
		}
	})
}

// raft treats a store that cannot have gaps differently after a snapshot
// restore, so the wrapper answers as the store underneath does.
func TestSyncedLogStoreIsMonotonicAsItsStore(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	if !sw.store.IsMonotonic() {
		t.Error("over raft-wal the store is not monotonic")
	}
	if (&syncedLogStore{LogStore: raft.NewInmemStore(), ls: sw.ls}).IsMonotonic() {
		t.Error("over raft's in-memory store the store is monotonic")
	}
}

// A flush that looked at the written index before a truncation must not
// publish it after: the entries it counted are gone.
func TestLogSyncFlushAcrossTruncation(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 5)
	sw.rec.mu.Lock()
	sw.rec.onSync = func() { sw.ls.truncated(4) }
	sw.rec.mu.Unlock()
	sw.flush(t)
	if d := sw.ls.durable.Load(); d > 3 {
		t.Fatalf("durable index %d after a flush that straddled truncating from 4", d)
	}
	sw.flush(t)
	sw.wantDurable(t, 3, "after the next flush")
}

// A follower's write, synced in place, latches its failure the same way.
func TestLogSyncFailedInPlaceFsyncLatches(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	eio := errors.New("input/output error")
	sw.rec.mu.Lock()
	sw.rec.failSync = eio
	sw.rec.mu.Unlock()
	if err := sw.store.StoreLogs([]*raft.Log{{Index: 1, Term: 1}}); !errors.Is(err, eio) {
		t.Fatalf("follower write: %v, want the fsync error", err)
	}
	sw.rec.mu.Lock()
	sw.rec.failSync = nil
	sw.rec.mu.Unlock()
	if err := sw.store.StoreLogs([]*raft.Log{{Index: 1, Term: 1}}); !errors.Is(err, eio) {
		t.Fatalf("write after a failed fsync: %v", err)
	}
	if err := sw.ls.Await(1); !errors.Is(err, eio) {
		t.Fatalf("await after a failed fsync: %v", err)
	}
}

func TestLogSyncFailedFsyncStopsEverything(t *testing.T) {
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 1)
	eio := errors.New("input/output error")
	sw.rec.mu.Lock()
	sw.rec.failSync = eio
	sw.rec.mu.Unlock()
	if err := sw.ls.flush(); !errors.Is(err, eio) {
		t.Fatalf("flush: %v, want the fsync error", err)
	}
	if sw.ls.err() == nil {
		t.Fatal("the failed fsync was not recorded")
	}
	if err := sw.ls.Await(1); !errors.Is(err, eio) {
		t.Fatalf("await after a failed fsync: %v", err)
	}
	// Clearing the fault proves nothing: the pages may be gone.
	sw.rec.mu.Lock()
	sw.rec.failSync = nil
	sw.rec.mu.Unlock()
	if err := sw.store.StoreLogs([]*raft.Log{{Index: 2, Term: 1}}); !errors.Is(err, eio) {
		t.Fatalf("leader write after a failed fsync: %v", err)
	}
	sw.leader = false
	if err := sw.store.StoreLogs([]*raft.Log{{Index: 2, Term: 1}}); !errors.Is(err, eio) {
		t.Fatalf("follower write after a failed fsync: %v", err)
	}
	sw.wantDurable(t, 0, "after a failed fsync")
}

// TestCommitClampHoldsFollowersBack sends AppendEntries through the clamp
// and reads what the follower receives, and checks that the clamp refuses
// a pipeline, which would go round it.
func TestCommitClampHoldsFollowersBack(t *testing.T) {
	recv, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan uint64, 8)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case rpc := <-recv.Consumer():
				req, ok := rpc.Command.(*raft.AppendEntriesRequest)
				if ok {
					got <- req.LeaderCommitIndex
				}
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
			case <-stop:
				return
			}
		}
	})
	send, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(stop)
		wg.Wait()
		_ = send.Close()
		_ = recv.Close()
	}()
	var durable uint64 = 7
	c := &commitClamp{NetworkTransport: send, durable: func() uint64 { return durable }}
	target := recv.LocalAddr()
	entry := []*raft.Log{{Index: 11, Term: 1, Type: raft.LogCommand}}
	for _, tc := range []struct{ commit, want uint64 }{{10, 7}, {5, 5}} {
		var resp raft.AppendEntriesResponse
		req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 10, PrevLogTerm: 1, Entries: entry, LeaderCommitIndex: tc.commit}
		if err := c.AppendEntries("f", target, req, &resp); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != tc.want {
			t.Errorf("direct: leader commit %d sent as %d, want %d", tc.commit, g, tc.want)
		}
		if req.LeaderCommitIndex != tc.commit {
			t.Errorf("the clamp changed raft's own request to %d", req.LeaderCommitIndex)
		}
	}
	// send would pipeline (two in flight, raft's default); the clamp must
	// not let it, or pipelined requests would pass unclamped.
	if p, err := c.AppendEntriesPipeline("f", target); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		if p != nil {
			_ = p.Close()
		}
		t.Fatalf("the clamp opened a pipeline: %v", err)
	}
}

// TestLogSyncTimesOnlyRealFlushes: raft.logsync.flush times the leader's
// fsyncs, so a flush that found nothing to sync (the flusher woke for
// entries an earlier flush already covered) must not add a sample.
func TestLogSyncTimesOnlyRealFlushes(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, 2*time.Hour)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	if _, err := metrics.NewGlobal(cfg, sink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = metrics.NewGlobal(cfg, &metrics.BlackholeSink{}) })
	flushes := func() int {
		n := 0
		for _, in := range sink.Data() {
			if s, ok := in.Samples["raft.logsync.flush"]; ok {
				n += s.Count
			}
		}
		return n
	}
	sw := openSyncedWAL(t, 0)
	sw.leader = true
	sw.write(t, 1, 3)
	sw.flush(t)
	if n := flushes(); n != 1 {
		t.Fatalf("%d flush samples after one flush with a file to sync, want 1", n)
	}
	sw.flush(t)
	if n := flushes(); n != 1 {
		t.Fatalf("%d flush samples after a flush with nothing to sync, want still 1", n)
	}
}
