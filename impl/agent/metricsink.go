package agent

import (
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// MemSink keeps the last minute of metrics in memory, in 10 s intervals,
// and shows the last closed interval in the shape go-metrics' InmemSink
// gives Consul's /v1/agent/metrics. It is that sink with a different
// bookkeeping: InmemSink joins and escapes a metric's key parts into its
// name on every sample (and raft times every RPC, apply and commit), which
// was 9 % of a loaded leader's CPU and a fifth of its allocations. MemSink
// builds each distinct name once and finds it again by a hash of the parts,
// so a sample costs a hash, a lock and a few additions.
type MemSink struct {
	prefix    string // the service name, first part of every name
	interval  time.Duration
	keep      int     // intervals kept, the current one included
	rateDenom float64 // seconds per interval: Rate is Sum per second
	now       func() time.Time
	hash      func(key []string, labels []metrics.Label) uint64 // hashKey; tests force collisions

	// The runtime statistics loop (startRuntimeStats), if any.
	stop, stopped chan struct{}
	stopOnce      sync.Once

	mu        sync.Mutex
	names     map[uint64][]*series // by hashKey, collisions chained
	intervals []*interval          // oldest first; the last is current
}

// series is one metric name with its labels, as InmemSink names it.
type series struct {
	parts  []string
	labels []metrics.Label
	name   string // "prefix.part.part", spaces made underscores
	hash   string // name then ";label=value" per label: InmemSink's map key
}

type interval struct {
	start    time.Time
	gauges   map[*series]float32
	precise  map[*series]float64 // precision gauges, kept apart as InmemSink does
	points   map[*series][]float32
	counters map[*series]*metrics.AggregateSample
	samples  map[*series]*metrics.AggregateSample
}

var nameSeed = maphash.MakeSeed()

// newMemSink returns a sink naming every metric under prefix, keeping
// retain worth of intervals of length every, on the clock now.
func newMemSink(prefix string, every, retain time.Duration, now func() time.Time) *MemSink {
	return &MemSink{
		prefix:    prefix,
		interval:  every,
		keep:      max(int(retain/every), 1),
		rateDenom: every.Seconds(),
		now:       now,
		hash:      hashKey,
		names:     map[uint64][]*series{},
	}
}

// SetGauge implements metrics.MetricSink.
func (s *MemSink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }

// SetGaugeWithLabels implements metrics.MetricSink.
func (s *MemSink) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current().gauges[s.find(key, labels)] = val
}

// SetPrecisionGauge implements metrics.PrecisionGaugeMetricSink.
func (s *MemSink) SetPrecisionGauge(key []string, val float64) {
	s.SetPrecisionGaugeWithLabels(key, val, nil)
}

// SetPrecisionGaugeWithLabels implements metrics.PrecisionGaugeMetricSink.
func (s *MemSink) SetPrecisionGaugeWithLabels(key []string, val float64, labels []metrics.Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current().precise[s.find(key, labels)] = val
}

// EmitKey implements metrics.MetricSink.
func (s *MemSink) EmitKey(key []string, val float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.current()
	se := s.find(key, nil)
	in.points[se] = append(in.points[se], val)
}

// IncrCounter implements metrics.MetricSink.
func (s *MemSink) IncrCounter(key []string, val float32) { s.IncrCounterWithLabels(key, val, nil) }

// IncrCounterWithLabels implements metrics.MetricSink.
func (s *MemSink) IncrCounterWithLabels(key []string, val float32, labels []metrics.Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ingest(s.current().counters, s.find(key, labels), float64(val))
}

// AddSample implements metrics.MetricSink.
func (s *MemSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }

// AddSampleWithLabels implements metrics.MetricSink.
func (s *MemSink) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ingest(s.current().samples, s.find(key, labels), float64(val))
}

// ingest adds v to se's aggregate as AggregateSample.Ingest does, without
// its LastUpdated, which the summary never shows and which costs a clock
// read per sample.
func (s *MemSink) ingest(m map[*series]*metrics.AggregateSample, se *series, v float64) {
	a := m[se]
	if a == nil {
		a = &metrics.AggregateSample{}
		m[se] = a
	}
	a.Count++
	a.Sum += v
	a.SumSq += v * v
	if v < a.Min || a.Count == 1 {
		a.Min = v
	}
	if v > a.Max || a.Count == 1 {
		a.Max = v
	}
	a.Rate = a.Sum / s.rateDenom
}

// find returns the series of key and labels, naming it on first use.
// Callers hold mu.
func (s *MemSink) find(key []string, labels []metrics.Label) *series {
	h := s.hash(key, labels)
	for _, se := range s.names[h] {
		if slices.Equal(se.parts, key) && slices.Equal(se.labels, labels) {
			return se
		}
	}
	se := &series{parts: slices.Clone(key), labels: slices.Clone(labels)}
	se.name = strings.ReplaceAll(strings.Join(append([]string{s.prefix}, key...), "."), " ", "_")
	var b strings.Builder
	b.WriteString(se.name)
	for _, l := range labels {
		b.WriteString(strings.ReplaceAll(";"+l.Name+"="+l.Value, " ", "_"))
	}
	se.hash = b.String()
	s.names[h] = append(s.names[h], se)
	return se
}

func hashKey(key []string, labels []metrics.Label) uint64 {
	var h maphash.Hash
	h.SetSeed(nameSeed)
	for _, p := range key {
		_, _ = h.WriteString(p)
		_ = h.WriteByte(0)
	}
	for _, l := range labels {
		_, _ = h.WriteString(l.Name)
		_ = h.WriteByte(1)
		_, _ = h.WriteString(l.Value)
		_ = h.WriteByte(0)
	}
	return h.Sum64()
}

// current returns the interval now falls in, starting it (and dropping the
// oldest beyond keep) at a boundary. Callers hold mu.
func (s *MemSink) current() *interval {
	start := s.now().Truncate(s.interval)
	if n := len(s.intervals); n > 0 && s.intervals[n-1].start.Equal(start) {
		return s.intervals[n-1]
	}
	in := &interval{
		start:    start,
		gauges:   map[*series]float32{},
		precise:  map[*series]float64{},
		points:   map[*series][]float32{},
		counters: map[*series]*metrics.AggregateSample{},
		samples:  map[*series]*metrics.AggregateSample{},
	}
	s.intervals = append(s.intervals, in)
	if len(s.intervals) > s.keep {
		s.intervals = slices.Delete(s.intervals, 0, len(s.intervals)-s.keep)
	}
	return in
}

// summary is what /v1/agent/metrics shows: the last closed interval, or the
// current one while it is the only one, as InmemSink.DisplayMetrics picks.
func (s *MemSink) summary() metrics.MetricsSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current()
	in := s.intervals[0]
	if n := len(s.intervals); n > 1 {
		in = s.intervals[n-2]
	}
	out := metrics.MetricsSummary{
		Timestamp:       in.start.Round(time.Second).UTC().String(),
		Gauges:          []metrics.GaugeValue{},
		PrecisionGauges: []metrics.PrecisionGaugeValue{},
		Points:          []metrics.PointValue{},
		Counters:        sampled(in.counters),
		Samples:         sampled(in.samples),
	}
	for se, v := range in.gauges {
		out.Gauges = append(out.Gauges, metrics.GaugeValue{Name: se.name, Hash: se.hash, Value: float32(finite(float64(v))), DisplayLabels: displayLabels(se)})
	}
	slices.SortFunc(out.Gauges, func(a, b metrics.GaugeValue) int { return strings.Compare(a.Hash, b.Hash) })
	for se, v := range in.precise {
		out.PrecisionGauges = append(out.PrecisionGauges, metrics.PrecisionGaugeValue{Name: se.name, Hash: se.hash, Value: finite(v), DisplayLabels: displayLabels(se)})
	}
	slices.SortFunc(out.PrecisionGauges, func(a, b metrics.PrecisionGaugeValue) int { return strings.Compare(a.Hash, b.Hash) })
	for se, p := range in.points {
		pts := make([]float32, len(p))
		for i, v := range p {
			pts[i] = float32(finite(float64(v)))
		}
		out.Points = append(out.Points, metrics.PointValue{Name: se.hash, Points: pts})
	}
	slices.SortFunc(out.Points, func(a, b metrics.PointValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func sampled(m map[*series]*metrics.AggregateSample) []metrics.SampledValue {
	out := make([]metrics.SampledValue, 0, len(m))
	for se, a := range m {
		c := *a // the summary outlives the lock
		for _, v := range []*float64{&c.Sum, &c.SumSq, &c.Min, &c.Max, &c.Rate} {
			*v = finite(*v)
		}
		out = append(out, metrics.SampledValue{
			Name: se.name, Hash: se.hash, AggregateSample: &c,
			Mean: finite(c.Mean()), Stddev: finite(c.Stddev()), DisplayLabels: displayLabels(se),
		})
	}
	slices.SortFunc(out, func(a, b metrics.SampledValue) int { return strings.Compare(a.Hash, b.Hash) })
	return out
}

// finite is v, or 0 where v is NaN or infinite, which JSON cannot carry:
// the variance of equal samples can round below zero, and its square root
// is then NaN (Consul's endpoint answers 500 for it).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func displayLabels(se *series) map[string]string {
	m := make(map[string]string, len(se.labels))
	for _, l := range se.labels {
		m[l.Name] = l.Value
	}
	return m
}
