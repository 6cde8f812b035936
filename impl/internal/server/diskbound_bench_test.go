package server

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// BenchmarkDiskBound writes b.N KV sets over 1000 keys through one durable
// server with the production compaction settings (config.go) and reports
// what its data directory holds afterwards: the raft-wal log, the retained
// snapshots, and the total. Live data stays at 1000 keys, so the figures
// show the bound that compaction keeps, not growth with history:
//
//	go test ./impl/internal/server -run '^$' -bench DiskBound -benchtime 200000x
func BenchmarkDiskBound(b *testing.B) {
	dir := b.TempDir()
	s := startDurableSolo(b, dir, clock.System{})
	value := make([]byte, 100)
	applyFromWorkers(b, s, func(i int64) []model.Command {
		return []model.Command{{KV: &model.KVOp{Verb: model.KVSet, Key: fmt.Sprintf("bench/%04d", i%1000), Value: value}}}
	})
	// The periodic snapshot would come within SnapshotInterval; take it now
	// so the figures do not depend on when the run ended.
	if err := s.raft.Snapshot().Error(); err != nil {
		b.Fatalf("snapshot: %v", err)
	}
	walBytes := dirBytes(b, filepath.Join(dir, "raft"))
	snapBytes := dirBytes(b, filepath.Join(dir, "snapshots"))
	b.ReportMetric(float64(walBytes), "wal-bytes")
	b.ReportMetric(float64(snapBytes), "snapshot-bytes")
	b.ReportMetric(float64(dirBytes(b, dir)), "datadir-bytes")
}

// applyFromWorkers applies cmds(i) for i in 1..b.N from 16 goroutines and
// stops the timer when all are done.
func applyFromWorkers(b *testing.B, s *Server, cmds func(i int64) []model.Command) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				for _, cmd := range cmds(i) {
					if _, err := s.Apply(context.Background(), cmd); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

// startDurableSolo starts a one-server durable cluster on dir with the
// production store and compaction settings, and waits until it leads.
func startDurableSolo(tb testing.TB, dir string, clock clock.Clock) *Server {
	tb.Helper()
	_, trans := raft.NewInmemTransport("solo")
	s, err := NewServer(Config{
		NodeName: "solo", HTTPAddr: "127.0.0.1:1", Clock: clock, DataDir: dir,
		Transport: trans, Peers: []Peer{{Name: "solo", RaftAddr: "solo"}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Shutdown() })
	select {
	case <-s.Registered():
	case <-time.After(30 * time.Second):
		tb.Fatal("durable server never registered itself")
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.currentTerm() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return s
}

// dirBytes is the total size of the regular files below dir.
func dirBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		tb.Fatalf("size of %s: %v", dir, err)
	}
	return total
}
