package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/model"
)

// BenchmarkReapBound runs b.N acquire+delete cycles, each on a key of its
// own, through one durable server, and reports what the deletions cost
// before and after the reap window passes (S52): heap in use, process RSS,
// the snapshot and the whole data directory. The server's clock is manual,
// so "after the window" needs no waiting:
//
//	make bench-reap    # go test ./impl/internal/server -run '^$' -bench ReapBound -benchtime 1000000x
func BenchmarkReapBound(b *testing.B) {
	dir := b.TempDir()
	clock := clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := startDurableSolo(b, dir, clock)
	res, err := s.Apply(context.Background(), model.Command{CreateSession: &model.CreateSession{Node: "solo"}})
	if err != nil || res.Err != nil {
		b.Fatalf("create session: %v %v", err, res.Err)
	}
	sid := res.SessionID

	applyFromWorkers(b, s, func(i int64) []model.Command {
		key := fmt.Sprintf("cycle/%08d", i)
		return []model.Command{
			{KV: &model.KVOp{Verb: model.KVLock, Key: key, Session: sid}},
			{KV: &model.KVOp{Verb: model.KVDelete, Key: key}},
		}
	})
	report := func(suffix string) {
		if err := s.raft.Snapshot().Error(); err != nil {
			b.Fatalf("snapshot: %v", err)
		}
		// Return freed pages to the OS so RSS shows what is still held.
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB-"+suffix)
		b.ReportMetric(float64(rssBytes(b))/(1<<20), "rss-MiB-"+suffix)
		b.ReportMetric(float64(newestSnapshotBytes(b, dir))/(1<<20), "snapshot-MiB-"+suffix)
		b.ReportMetric(float64(dirBytes(b, dir))/(1<<20), "datadir-MiB-"+suffix)
	}
	report("before")

	// Let the window pass in reap intervals until every deletion is gone.
	tombstones := func() (n int) {
		s.Read(func(st *model.State) { _, _, _, _, n = st.Counts() })
		return n
	}
	deadline := time.Now().Add(5 * time.Minute)
	for tombstones() > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d deletions still not reaped", tombstones())
		}
		clock.Advance(s.cfg.ReapInterval)
		time.Sleep(10 * time.Millisecond)
	}
	report("after")
}

// newestSnapshotBytes is the size of the latest snapshot under dir (the
// store keeps two, so the directory still holds the one before).
func newestSnapshotBytes(tb testing.TB, dir string) int64 {
	store, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		tb.Fatalf("open snapshot store: %v", err)
	}
	metas, err := store.List()
	if err != nil || len(metas) == 0 {
		tb.Fatalf("list snapshots: %d, %v", len(metas), err)
	}
	return metas[0].Size
}

// rssBytes is this process's resident set size (Linux; 0 elsewhere).
func rssBytes(tb testing.TB) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("parse VmRSS %q: %v", line, err)
			}
			return kb << 10
		}
	}
	return 0
}
