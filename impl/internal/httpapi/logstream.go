package httpapi

import (
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// LogStream is the agent's log as GET /v1/agent/monitor streams it: each
// monitor registers a sink of its own level and format on the agent's
// intercept logger, so it sees lines below the logger's level too.
type LogStream struct {
	logger   hclog.InterceptLogger
	watchers atomic.Int32
}

// NewLogStream streams what logger and every logger named from it log.
func NewLogStream(logger hclog.InterceptLogger) *LogStream {
	return &LogStream{logger: logger}
}

// watched says whether a monitor is streaming; nil is never watched.
func (s *LogStream) watched() bool { return s != nil && s.watchers.Load() > 0 }

// register adds a monitor's sink until the returned function is called.
func (s *LogStream) register(sink hclog.SinkAdapter) (deregister func()) {
	s.watchers.Add(1)
	s.logger.RegisterSink(sink)
	return func() {
		s.logger.DeregisterSink(sink)
		s.watchers.Add(-1)
	}
}
