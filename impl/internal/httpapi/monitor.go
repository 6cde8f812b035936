package httpapi

import (
	"github.com/tenurekv/tenure/acl"

	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// GET /v1/agent/monitor streams the agent's log as Consul's does: lines at
// ?loglevel= (default INFO) and above, plain or as JSON (?logjson), until
// the caller hangs up. A reader slower than the log loses lines rather
// than holding memory: each monitor keeps at most monitorBuffer lines,
// counts the ones it drops, and the agent logs the count when the monitor
// ends, as Consul does.

const (
	// monitorBuffer is how many lines wait for a slow reader (Consul's 512).
	monitorBuffer = 512
	// maxMonitorLine bounds one buffered line; a longer one is cut.
	maxMonitorLine = 16 << 10
	// monitorWriteTimeout bounds each write to the caller, so a caller
	// that stops reading ends its monitor instead of holding it.
	monitorWriteTimeout = 30 * time.Second
)

// monitorLevels are the levels Consul's monitor accepts, upper-cased;
// "ERR" is its older spelling of ERROR.
var monitorLevels = map[string]hclog.Level{
	"TRACE": hclog.Trace, "DEBUG": hclog.Debug, "INFO": hclog.Info, "WARN": hclog.Warn, "ERR": hclog.Error, "ERROR": hclog.Error,
}

// monitorSink takes the lines of one monitor's sink. Writes come from the
// logging goroutines, under the intercept logger's lock, so they never
// block: a full buffer drops the line and counts it.
type monitorSink struct {
	lines   chan []byte
	dropped atomic.Int64
}

func (m *monitorSink) Write(p []byte) (int, error) {
	line := p
	if len(line) > maxMonitorLine {
		line = append(line[:maxMonitorLine:maxMonitorLine], "…\n"...)
	} else {
		line = append([]byte(nil), p...) // the logger reuses p
	}
	select {
	case m.lines <- line:
	default:
		m.dropped.Add(1)
	}
	return len(p), nil
}

// agentMonitor answers GET /v1/agent/monitor.
func (o *opsHandler) agentMonitor(c *call) error {
	if err := o.allowed(c, acl.ResourceAgent, o.opts.Node, acl.AccessRead); err != nil {
		return err // S90, decided before the parameters as in Consul
	}
	name := c.query().Get("loglevel")
	if name == "" {
		name = "INFO"
	}
	level, ok := monitorLevels[strings.ToUpper(name)]
	if !ok {
		return errorf(http.StatusBadRequest, "Unknown log level: %s", name)
	}
	if o.logs == nil {
		return errorf(http.StatusInternalServerError, "Streaming logs is not supported by this agent's logger")
	}
	_, logJSON := c.query()["logjson"]
	sink := &monitorSink{lines: make(chan []byte, monitorBuffer)}
	deregister := o.logs.register(hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: level, JSONFormat: logJSON, Output: sink}))
	defer func() {
		deregister()
		if n := sink.dropped.Load(); n > 0 {
			o.log.Warn("Dropped logs during monitor request", "dropped_count", n)
		}
	}()
	rc := http.NewResponseController(c.w)
	c.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return nil
	}
	// From here on the answer has begun: a failed write means the caller
	// is gone or stopped reading, and the monitor just ends.
	write := func(line []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(monitorWriteTimeout))
		_, err := c.w.Write(line)
		return err == nil
	}
	ctx := c.r.Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line := <-sink.lines:
			if !write(line) {
				return nil
			}
			// Send what else is waiting in the same flush.
			for more := true; more; {
				select {
				case line := <-sink.lines:
					if !write(line) {
						return nil
					}
				default:
					more = false
				}
			}
			if rc.Flush() != nil {
				return nil
			}
		}
	}
}
