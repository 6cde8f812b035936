package agent

import (
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// startRuntimeStats emits the Go runtime's statistics (goroutines, heap,
// GC pauses: go-metrics' runtime.* gauges and samples) through m every
// interval until Stop.
func (s *MemSink) startRuntimeStats(m *metrics.Metrics, every time.Duration) {
	s.stop = make(chan struct{})
	s.stopped = make(chan struct{})
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		m.EmitRuntimeStats() // at once, so the first interval has them
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				m.EmitRuntimeStats()
			}
		}
	}()
}

// Stop ends the runtime statistics NewTelemetry started; the sink keeps
// what it has. Safe to call more than once, and on a sink without them.
func (s *MemSink) Stop() {
	s.stopOnce.Do(func() {
		if s.stop != nil {
			close(s.stop)
			<-s.stopped
		}
	})
}
