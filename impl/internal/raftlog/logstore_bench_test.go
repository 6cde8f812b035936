package raftlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/segment"

	"github.com/tenurekv/tenure/impl/disk"
)

// These benchmarks chose the durable log store (see stores.go): each op is
// one raft append as the leader does it under light load (1 entry) and under
// load (a batch of 64, raft's MaxAppendEntries), each fsynced. Run with
//
//	go test ./impl/internal/raftlog -run '^$' -bench LogStore -benchtime 2s
func BenchmarkLogStore(b *testing.B) {
	stores := map[string]func(dir string) (raft.LogStore, func() error, error){
		"wal": func(dir string) (raft.LogStore, func() error, error) {
			w, err := wal.Open(dir)
			if err != nil {
				return nil, nil, err
			}
			return w, w.Close, nil
		},
		// raft-wal on zero-filled segments with fdatasync (segmentfill.go).
		"wal-zeroed": func(dir string) (raft.LogStore, func() error, error) {
			v := &zeroedVFS{FS: disk.OS{}}
			w, err := wal.Open(dir, wal.WithSegmentFiler(segment.NewFiler(dir, v)))
			if err != nil {
				return nil, nil, err
			}
			return w, func() error { return errors.Join(w.Close(), v.Close()) }, nil
		},
		"boltdb": func(dir string) (raft.LogStore, func() error, error) {
			s, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		},
	}
	for _, name := range []string{"wal", "wal-zeroed", "boltdb"} {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/batch=%d", name, batch), func(b *testing.B) {
				store, closeFn, err := stores[name](b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := closeFn(); err != nil {
						b.Error(err)
					}
				}()
				data := make([]byte, 200) // about one encoded acquire
				logs := make([]*raft.Log, batch)
				next := uint64(1)
				b.SetBytes(int64(batch * len(data)))
				b.ResetTimer()
				for range b.N {
					for j := range logs {
						logs[j] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
						next++
					}
					if err := store.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
