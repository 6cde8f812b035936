package raftlog

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/disk"
)

// BenchmarkAppendBesideSpare measures what preparing a spare segment does to
// the log's own appends. Each op prepares one 64 MiB spare while another
// file takes 300-byte appends, each fdatasynced, back to back, as a loaded
// follower's log does; "none" appends for 300 ms with no preparation. It
// reports the appends' latency and the preparation's length. Run with
//
//	go test ./impl/internal/raftlog -run '^$' -bench AppendBesideSpare -benchtime 1x -count 6
func BenchmarkAppendBesideSpare(b *testing.B) {
	const size = 64 << 20
	variants := []struct {
		name    string
		prepare func(dir string) error
	}{
		{"none", func(string) error { time.Sleep(300 * time.Millisecond); return nil }},
		// As before pacing: the whole file written, then one sync.
		{"burst", func(dir string) error {
			f, err := os.Create(filepath.Join(dir, spareName))
			if err != nil {
				return err
			}
			defer f.Close()
			if err := zeroFill(f, size); err != nil {
				return err
			}
			return f.Sync()
		}},
		{"paced", func(dir string) error { return prepareSpare(disk.OS{}, dir, size, nil) }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			dir := b.TempDir()
			log, err := os.Create(filepath.Join(dir, "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer log.Close()
			if err := zeroFill(log, 16<<20); err != nil {
				b.Fatal(err)
			}
			if err := log.Sync(); err != nil {
				b.Fatal(err)
			}
			entry := make([]byte, 300)
			var lat []time.Duration
			var prep time.Duration
			b.ResetTimer()
			for range b.N {
				if err := os.RemoveAll(filepath.Join(dir, spareName)); err != nil {
					b.Fatal(err)
				}
				var done atomic.Bool
				errc := make(chan error, 1)
				start := time.Now()
				go func() {
					err := v.prepare(dir)
					prep += time.Since(start)
					done.Store(true)
					errc <- err
				}()
				for off := int64(0); !done.Load(); off = (off + int64(len(entry))) % (16 << 20) {
					t0 := time.Now()
					if _, err := log.WriteAt(entry, off); err != nil {
						b.Fatal(err)
					}
					if err := disk.Fdatasync(log); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(at(0.5), "append-p50-µs")
			b.ReportMetric(at(0.99), "append-p99-µs")
			b.ReportMetric(at(1), "append-max-µs")
			b.ReportMetric(float64(prep.Milliseconds())/float64(b.N), "prepare-ms/op")
		})
	}
}
