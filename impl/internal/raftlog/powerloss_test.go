package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
)

// powerVFS stands between raft-wal's zero-filled segment files and
// LogSync, and can lose power. It keeps each file's writes since that
// file's last real fsync; cut leaves every file as a disk may hold it
// after a power loss: what the fsync covered, plus a random subset of the
// later writes, in order, some of them torn after a whole number of 512-byte
// sectors. A file created since its last fsync may lose
// its name as well (its directory entry was never synced). After the cut
// nothing reaches the disk: writes, fsyncs and meta commits fail, as in a
// machine that is off, even from raft-wal's background rotation.
type powerVFS struct {
	types.VFS
	rng *rand.Rand
	// keep is the chance that an unsynced write reached the disk anyway.
	keep float64

	// mu is held across each write, fsync and meta commit, so that the
	// cut falls between two of them.
	mu    sync.Mutex
	lost  bool
	files []*powerFile
}

var errPowerLost = errors.New("power lost")

type powerFile struct {
	types.WritableFile
	path    string
	created bool // created by this process and not yet fsynced
	pending []pendingWrite
	v       *powerVFS
}

type pendingWrite struct {
	off  int64
	data []byte
	// before is what data replaced; shorter when the write grew the file.
	before []byte
}

func (v *powerVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lost {
		return nil, errPowerLost
	}
	f, err := v.VFS.Create(dir, name, size)
	return v.track(f, filepath.Join(dir, name), true, err)
}

func (v *powerVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f, err := v.VFS.OpenWriter(dir, name)
	return v.track(f, filepath.Join(dir, name), false, err)
}

func (v *powerVFS) track(f types.WritableFile, path string, created bool, err error) (types.WritableFile, error) {
	if err != nil {
		return nil, err
	}
	pf := &powerFile{WritableFile: f, path: path, created: created, v: v}
	v.files = append(v.files, pf)
	return pf, nil
}

func (f *powerFile) WriteAt(p []byte, off int64) (int, error) {
	f.v.mu.Lock()
	defer f.v.mu.Unlock()
	if f.v.lost {
		return 0, errPowerLost
	}
	// A segment is zero-filled to its size, but a batch that starts near
	// its end runs past it: then the pre-image is shorter than the write.
	before := make([]byte, len(p))
	had, err := f.WritableFile.ReadAt(before, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("power: read before write at %d of %s: %w", off, f.path, err)
	}
	n, err := f.WritableFile.WriteAt(p, off)
	f.pending = append(f.pending, pendingWrite{off: off, data: bytes.Clone(p[:n]), before: before[:min(had, n)]})
	return n, err
}

func (f *powerFile) Sync() error {
	f.v.mu.Lock()
	defer f.v.mu.Unlock()
	if f.v.lost {
		return errPowerLost
	}
	if err := f.WritableFile.Sync(); err != nil {
		return err
	}
	f.pending, f.created = nil, false
	return nil
}

// cut loses power.
func (v *powerVFS) cut() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lost = true
	for _, f := range v.files {
		if f.created && v.rng.Float64() >= v.keep {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			f.pending = nil
			continue
		}
		for i := len(f.pending) - 1; i >= 0; i-- {
			w := f.pending[i]
			if _, err := f.WritableFile.WriteAt(w.before, w.off); err != nil {
				return err
			}
			if len(w.before) < len(w.data) {
				// The write had grown the file.
				if err := os.Truncate(f.path, w.off+int64(len(w.before))); err != nil {
					return err
				}
			}
		}
		for _, w := range f.pending {
			if v.rng.Float64() >= v.keep {
				continue
			}
			data := w.data
			if v.rng.Float64() < v.keep/2 {
				// Torn: the disk got the first sectors of the write only.
				data = data[:v.rng.IntN(len(data)/512+1)*512]
			}
			if _, err := f.WritableFile.WriteAt(data, w.off); err != nil {
				return err
			}
		}
		f.pending = nil
	}
	return nil
}

// powerMeta is raft-wal's meta store on the same power supply: a commit
// is durable when it returns (bbolt syncs), and none happens after the cut.
type powerMeta struct {
	types.MetaStore
	v *powerVFS
}

func (m powerMeta) CommitState(st types.PersistentState) error {
	m.v.mu.Lock()
	defer m.v.mu.Unlock()
	if m.v.lost {
		return errPowerLost
	}
	return m.MetaStore.CommitState(st)
}

func (m powerMeta) SetStable(key, value []byte) error {
	m.v.mu.Lock()
	defer m.v.mu.Unlock()
	if m.v.lost {
		return errPowerLost
	}
	return m.MetaStore.SetStable(key, value)
}

// powerLog is the durable raft log of one server across power losses.
type powerLog struct {
	t   *testing.T
	dir string
	dl  *durableLog
	pv  *powerVFS
	// leader makes StoreLogs defer its fsync, as on a leader.
	leader bool
	// latest is the content last written at each index; entries past a
	// tail truncation or before a compaction are forgotten.
	latest      map[uint64][]byte
	first, last uint64
}

func openPowerLog(t *testing.T, dir string, rng *rand.Rand, keep float64) *powerLog {
	t.Helper()
	pl := &powerLog{t: t, dir: dir, latest: map[uint64][]byte{}, first: 1}
	pl.reopen(rng, keep)
	return pl
}

// reopen opens the log as a restarting server does.
func (pl *powerLog) reopen(rng *rand.Rand, keep float64) {
	pl.t.Helper()
	pl.pv = &powerVFS{rng: rng, keep: keep}
	dl, err := openDurableLog(pl.dir, hclog.NewNullLogger(), durableLogOptions{
		wrapVFS:     func(v types.VFS) types.VFS { pl.pv.VFS = v; return pl.pv },
		wrapMeta:    func(m types.MetaStore) types.MetaStore { return powerMeta{MetaStore: m, v: pl.pv} },
		segmentSize: 16 << 10, // a rotation every few dozen entries
		manualFlush: true,
	})
	if err != nil {
		pl.t.Fatalf("reopen after power loss: %v", err)
	}
	pl.dl = dl
	dl.sync.SetLeader(func() bool { return pl.leader })
}

func (pl *powerLog) write(from, to uint64, term uint64) {
	pl.t.Helper()
	logs := make([]*raft.Log, 0, to-from+1)
	for i := from; i <= to; i++ {
		data := fmt.Appendf(nil, "term %d index %d %0300d", term, i, i)
		logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: data})
		pl.latest[i] = data
	}
	if err := pl.dl.logs.StoreLogs(logs); err != nil {
		pl.t.Fatalf("store %d..%d: %v", from, to, err)
	}
	pl.last = to
}

// truncate deletes the tail from index from on, as a follower does when a
// new leader's entries conflict with it.
func (pl *powerLog) truncate(from uint64) {
	pl.t.Helper()
	if err := pl.dl.logs.DeleteRange(from, pl.last); err != nil {
		pl.t.Fatalf("delete %d..%d: %v", from, pl.last, err)
	}
	for i := from; i <= pl.last; i++ {
		delete(pl.latest, i)
	}
	pl.last = from - 1
}

// compact deletes the log's head up to index to, as raft does after a
// snapshot.
func (pl *powerLog) compact(to uint64) {
	pl.t.Helper()
	if err := pl.dl.logs.DeleteRange(pl.first, to); err != nil {
		pl.t.Fatalf("delete %d..%d: %v", pl.first, to, err)
	}
	for i := pl.first; i <= to; i++ {
		delete(pl.latest, i)
	}
	pl.first = to + 1
}

// powerLossCheck is what a restarted server's log must show: it starts at
// first (a compaction, once it returns, is on disk), holds every entry up
// to durable, the index the server had declared durable before the loss,
// and past it only entries that were written there last; no truncated
// entry comes back.
func powerLossCheck(logs raft.LogStore, latest map[uint64][]byte, first, durable uint64) error {
	from, err := logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := logs.LastIndex()
	if err != nil {
		return err
	}
	if from != first && last > 0 {
		return fmt.Errorf("the log starts at %d, want %d", from, first)
	}
	if last < durable {
		return fmt.Errorf("the log ends at %d, below its durable index %d", last, durable)
	}
	for i := from; i <= last; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("entry %d of %d (durable %d): %w", i, last, durable, err)
		}
		want, ok := latest[i]
		switch {
		case !ok:
			return fmt.Errorf("entry %d is back after its truncation (durable %d): %q", i, durable, l.Data)
		case !bytes.Equal(l.Data, want):
			return fmt.Errorf("entry %d reads %q, last written %q (durable %d)", i, l.Data, want, durable)
		}
	}
	return nil
}

// runToPowerLoss writes, flushes, truncates, compacts and switches roles at
// random, then loses power and reopens; it returns the check's verdict.
// declare, if set, runs just before the loss and may raise the durable
// index by hand.
func (pl *powerLog) runToPowerLoss(rng *rand.Rand, steps int, declare func(ls *LogSync)) error {
	pl.t.Helper()
	term := uint64(1)
	for range steps {
		switch r := rng.IntN(20); {
		case r < 12:
			n := uint64(1 + rng.IntN(12))
			pl.write(pl.last+1, pl.last+n, term)
		case r < 16:
			if err := pl.dl.sync.flush(); err != nil {
				pl.t.Fatal(err)
			}
		case r < 18:
			pl.leader = !pl.leader
			term++
		case r < 19:
			if pl.last > pl.first && !pl.leader {
				pl.truncate(pl.last - uint64(rng.IntN(int(min(pl.last-pl.first, 8)))))
				term++
			}
		default:
			if pl.last > pl.first+10 {
				pl.compact(pl.first + uint64(rng.IntN(int(pl.last-pl.first-10))))
			}
		}
	}
	if declare != nil {
		declare(pl.dl.sync)
	}
	durable := pl.dl.sync.durable.Load()
	if err := pl.pv.cut(); err != nil {
		pl.t.Fatal(err)
	}
	// Closing fails to flush what is left (the power is off); it only
	// releases the files and locks for the restart.
	if err := closeAll(pl.dl.closers); err != nil && !errors.Is(err, errPowerLost) {
		pl.t.Fatal(err)
	}
	pl.reopen(rng, 1)
	defer func() {
		if err := closeAll(pl.dl.closers); err != nil {
			pl.t.Error(err)
		}
	}()
	if err := powerLossCheck(pl.dl.logs, pl.latest, pl.first, durable); err != nil {
		return err
	}
	// The recovered log takes new entries after what survived.
	last, err := pl.dl.logs.LastIndex()
	if err != nil {
		return err
	}
	for i := range pl.latest {
		if i > last {
			delete(pl.latest, i)
		}
	}
	pl.last = last
	pl.write(last+1, last+3, term+1)
	return powerLossCheck(pl.dl.logs, pl.latest, pl.first, last+3)
}

// TestLogSyncPowerLoss runs the production log stack (LogSync over raft-wal
// on zero-filled segments) to a power loss at a random point, as leader and
// follower by turns, with tail truncations and compactions, and reopens it
// as a restarting server would: every entry the server had counted durable
// is there, nothing truncated or compacted comes back, and the log takes
// new entries. Half of the unsynced writes reach the disk, a quarter of
// those torn, so raft-wal meets torn batches, later batches without earlier
// ones and lost segment files, not only a clean cut.
func TestLogSyncPowerLoss(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			pl := openPowerLog(t, t.TempDir(), rng, 0.5)
			pl.leader = seed%2 == 0
			if err := pl.runToPowerLoss(rng, 40+rng.IntN(80), nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPowerLossCheckCatchesAFalseDurableIndex is the check's known-bad
// input: a durable index raised without its fsync (the fault the apply gate
// and the commit clamp rely on LogSync never to make), followed by a loss
// that keeps none of the unsynced writes, must be reported.
func TestPowerLossCheckCatchesAFalseDurableIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	pl := openPowerLog(t, t.TempDir(), rng, 0)
	pl.leader = true
	pl.write(1, 5, 1)
	if err := pl.dl.sync.flush(); err != nil {
		t.Fatal(err)
	}
	pl.write(6, 9, 1)
	err := pl.runToPowerLoss(rng, 0, func(ls *LogSync) {
		ls.mu.Lock()
		ls.advanceLocked(9)
		ls.mu.Unlock()
	})
	if err == nil {
		t.Fatal("a durable index raised without an fsync survived a power loss unreported")
	}
	t.Logf("reported: %v", err)
}

// TestPowerLossCheckCatchesResurrectedAndWrongEntries covers the check's
// other two rules on a hand-made log: an entry past a truncation, and an
// entry whose content is not the one last written there.
func TestPowerLossCheckCatchesResurrectedAndWrongEntries(t *testing.T) {
	logs := raft.NewInmemStore()
	latest := map[uint64][]byte{}
	for i := uint64(1); i <= 3; i++ {
		data := fmt.Appendf(nil, "v%d", i)
		latest[i] = data
		if err := logs.StoreLog(&raft.Log{Index: i, Term: 1, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if err := powerLossCheck(logs, latest, 1, 3); err != nil {
		t.Fatalf("a good log: %v", err)
	}
	delete(latest, 3)
	if err := powerLossCheck(logs, latest, 1, 2); err == nil {
		t.Error("a truncated entry that came back was not reported")
	}
	if err := powerLossCheck(logs, latest, 2, 2); err == nil {
		t.Error("a compacted entry that came back was not reported")
	}
	latest[3] = []byte("other")
	if err := powerLossCheck(logs, latest, 1, 2); err == nil {
		t.Error("an entry with other content was not reported")
	}
}
