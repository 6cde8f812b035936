package linearizability

import (
	"testing"
	"time"
)

// BenchmarkCheck10k checks a generated 10,000-operation history of 8
// clients on 16 keys (plus session churn and ~200 invalidation events),
// per key. Target: at most 1 s per check on the 2-core build machine.
func BenchmarkCheck10k(b *testing.B) {
	h, _ := generate(genConfig{Seed: 42, Clients: 8, Keys: 16, Ops: 10000, UnknownRate: 0.01, EventEvery: 20 * time.Millisecond})
	var rep Report
	for b.Loop() {
		var err error
		rep, err = Check(h, Options{Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rep.Ops), "ops/history")
	b.ReportMetric(float64(rep.Partitions), "partitions")
}

// BenchmarkCheckWhole checks a small history unpartitioned, for comparison.
func BenchmarkCheckWhole(b *testing.B) {
	h, _ := generate(genConfig{Seed: 42, Clients: 4, Keys: 4, Ops: 500, UnknownRate: 0.01, EventEvery: 5 * time.Millisecond})
	for b.Loop() {
		if _, err := Check(h, Options{Timeout: time.Minute, Whole: true}); err != nil {
			b.Fatal(err)
		}
	}
}
