package agent

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// sinkCalls drives a sink through every kind of metric, with labels, names
// with spaces, one key under two label sets, overwritten gauges and enough
// samples for a standard deviation. Keys are given without the "consul"
// part when prefixed is false.
func sinkCalls(s metrics.MetricSink, prefixed bool) {
	k := func(parts ...string) []string {
		if prefixed {
			return append([]string{"consul"}, parts...)
		}
		return parts
	}
	ps := s.(metrics.PrecisionGaugeMetricSink)
	for i := range 40 {
		v := float32(i%7) * 1.25
		s.AddSample(k("raft", "commitTime"), v)
		s.AddSampleWithLabels(k("raft", "replication", "appendEntries", "rpc"), v+1, []metrics.Label{{Name: "peer_id", Value: "s2"}})
		s.AddSampleWithLabels(k("raft", "replication", "appendEntries", "rpc"), v+2, []metrics.Label{{Name: "peer_id", Value: "s3"}})
		s.IncrCounter(k("raft", "apply"), 1)
		s.IncrCounterWithLabels(k("http", "PUT", "kv"), 2, []metrics.Label{{Name: "the node", Value: "a b"}})
		s.SetGauge(k("runtime", "num goroutines"), float32(i))
		s.SetGaugeWithLabels(k("raft", "leader", "oldestLogAge"), v, []metrics.Label{{Name: "x", Value: "1"}, {Name: "y", Value: "2"}})
		ps.SetPrecisionGauge(k("raft", "lastIndex"), float64(i)*1e9+0.5)
		if i%10 == 0 {
			s.EmitKey(k("memberlist", "event"), v)
		}
	}
	s.AddSample(k("raft", "fsm", "apply"), 0.25) // a count of one: zero stddev
}

// TestMemSinkShowsWhatInmemSinkShows: the same calls give the same
// /v1/agent/metrics body as go-metrics' InmemSink, field for field, also
// when every key hashes alike (the names then all share one chain).
func TestMemSinkShowsWhatInmemSinkShows(t *testing.T) {
	for _, collide := range []bool{false, true} {
		want, got := "", ""
		// InmemSink reads the wall clock; retry on the rare run that
		// straddles an hour boundary, where the two would show different
		// intervals.
		for attempt := 0; ; attempt++ {
			t0 := time.Now()
			ref := metrics.NewInmemSink(time.Hour, 2*time.Hour)
			sinkCalls(ref, true)
			summary, err := ref.DisplayMetrics(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
			if err != nil {
				t.Fatal(err)
			}
			mem := newMemSink("consul", time.Hour, 2*time.Hour, func() time.Time { return t0 })
			if collide {
				mem.hash = func([]string, []metrics.Label) uint64 { return 7 }
			}
			sinkCalls(mem, false)
			if t0.Truncate(time.Hour) != time.Now().Truncate(time.Hour) && attempt < 3 {
				continue
			}
			want, got = encode(t, summary), encode(t, mem.summary())
			break
		}
		if got != want {
			t.Fatalf("collide=%v:\nMemSink  %s\nInmemSink %s", collide, got, want)
		}
	}
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMemSinkIntervals: the summary is the current interval while it is the
// only one, then the last closed one; only the last retain/interval are kept.
func TestMemSinkIntervals(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 3, 0, time.UTC)
	s := newMemSink("consul", 10*time.Second, 30*time.Second, func() time.Time { return now })
	count := func() int {
		for _, c := range s.summary().Counters {
			if c.Name == "consul.ops" {
				return c.Count
			}
		}
		return 0
	}
	s.IncrCounter([]string{"ops"}, 1)
	s.IncrCounter([]string{"ops"}, 1)
	if c := count(); c != 2 {
		t.Fatalf("only interval: count %d, want 2", c)
	}
	now = now.Add(10 * time.Second) // a new interval: the first is closed
	s.IncrCounter([]string{"ops"}, 1)
	if c, ts := count(), s.summary().Timestamp; c != 2 || ts != "2026-11-25 10:00:00 +0000 UTC" {
		t.Fatalf("after a boundary: count %d at %s, want the closed interval's 2 at 10:00:00", c, ts)
	}
	now = now.Add(10 * time.Second) // the middle interval, with one op, is closed now
	if c := count(); c != 1 {
		t.Fatalf("two boundaries on: count %d, want 1", c)
	}
	// As InmemSink, retention counts intervals, not time: after a quiet
	// minute the last closed interval is the empty one a read started.
	now = now.Add(time.Minute)
	s.IncrCounter([]string{"ops"}, 1)
	if c := count(); c != 0 {
		t.Fatalf("after a minute idle: count %d, want the empty closed interval's 0", c)
	}
	for range 10 {
		now = now.Add(10 * time.Second)
		s.IncrCounter([]string{"ops"}, 1)
	}
	if n := len(s.intervals); n != 3 {
		t.Fatalf("%d intervals kept, want 3 (30 s of 10 s)", n)
	}
}

// TestTelemetryNamesUnderConsul: through go-metrics' global functions (as
// raft reports), names carry the single "consul" part the dashboards
// expect, not two.
func TestTelemetryNamesUnderConsul(t *testing.T) {
	sink, err := NewTelemetry(TelemetryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The registry is global: leave none of this test's sink behind.
	t.Cleanup(func() {
		sink.Stop()
		_, _ = metrics.NewGlobal(metrics.DefaultConfig(""), &metrics.BlackholeSink{})
	})
	metrics.MeasureSince([]string{"raft", "commitTime"}, time.Now())
	metrics.IncrCounterWithLabels([]string{"raft", "apply"}, 1, []metrics.Label{{Name: "a", Value: "b"}})
	body := encode(t, sink.summary())
	for _, name := range []string{`"Name": "consul.raft.commitTime"`, `"Name": "consul.raft.apply"`} {
		if !strings.Contains(body, name) {
			t.Errorf("summary lacks %s:\n%s", name, body)
		}
	}
	if strings.Contains(body, "consul.consul") {
		t.Errorf("a name carries the prefix twice:\n%s", body)
	}
}

// TestTelemetryRuntimeGauges: the Go runtime's statistics are gauges named
// consul.<host>.runtime.*, as Consul's (consul/api's metrics test looks for
// consul.<host>.runtime.alloc_bytes), or consul.runtime.* with
// disable_hostname; samples and counters never carry the host.
func TestTelemetryRuntimeGauges(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no host name: %v", err)
	}
	for _, tc := range []struct {
		opts TelemetryOptions
		want string
	}{
		{TelemetryOptions{}, "consul." + host + ".runtime.alloc_bytes"},
		{TelemetryOptions{DisableHostname: true}, "consul.runtime.alloc_bytes"},
	} {
		sink, err := NewTelemetry(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		metrics.IncrCounter([]string{"ops"}, 1)
		sink.Stop() // the first statistics are taken at once; Stop waits for them
		sum := sink.summary()
		var gauges []string
		for _, g := range sum.Gauges {
			gauges = append(gauges, g.Name)
		}
		if !slices.Contains(gauges, tc.want) {
			t.Errorf("%+v: gauges %v lack %s", tc.opts, gauges, tc.want)
		}
		if len(sum.Counters) != 1 || sum.Counters[0].Name != "consul.ops" {
			t.Errorf("%+v: counters %+v, want consul.ops alone", tc.opts, sum.Counters)
		}
		sink.Stop() // twice is fine
	}
	_, _ = metrics.NewGlobal(metrics.DefaultConfig(""), &metrics.BlackholeSink{})
}

// TestSummaryHasNoNaN: values JSON cannot carry are shown as 0, so the
// summary always encodes.
func TestSummaryHasNoNaN(t *testing.T) {
	s := newMemSink("consul", 10*time.Second, time.Minute, time.Now)
	nan := float32(math.NaN())
	s.SetGauge([]string{"g"}, nan)
	s.SetPrecisionGauge([]string{"p"}, math.Inf(1))
	s.EmitKey([]string{"k"}, nan)
	s.AddSample([]string{"s"}, nan)
	s.AddSample([]string{"s"}, 1)
	if _, err := json.Marshal(s.summary()); err != nil {
		t.Fatalf("summary with NaN samples: %v", err)
	}
}

// BenchmarkSinkSample is one raft timer through go-metrics' registry, as
// raft reports it, into InmemSink (with the service name as go-metrics'
// prefix, as before) and into MemSink.
func BenchmarkSinkSample(b *testing.B) {
	run := func(b *testing.B, service string, sink metrics.MetricSink) {
		cfg := metrics.DefaultConfig(service)
		cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
		m, err := metrics.New(cfg, sink)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			m.MeasureSince([]string{"raft", "rpc", "appendEntries"}, start)
		}
	}
	b.Run("InmemSink", func(b *testing.B) { run(b, "consul", metrics.NewInmemSink(10*time.Second, time.Minute)) })
	b.Run("MemSink", func(b *testing.B) { run(b, "", newMemSink("consul", 10*time.Second, time.Minute, time.Now)) })
}
