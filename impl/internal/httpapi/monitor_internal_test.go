package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/internal/testlog"
)

// TestMonitorSinkBounded: a sink whose reader is not reading keeps
// monitorBuffer lines and counts every line past them as dropped; a line
// longer than maxMonitorLine is cut; the logger's buffer is not kept.
func TestMonitorSinkBounded(t *testing.T) {
	s := &monitorSink{lines: make(chan []byte, monitorBuffer)}
	line := []byte("x\n")
	for range monitorBuffer + 7 {
		if n, err := s.Write(line); n != len(line) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if len(s.lines) != monitorBuffer || s.dropped.Load() != 7 {
		t.Fatalf("%d buffered, %d dropped; want %d and 7", len(s.lines), s.dropped.Load(), monitorBuffer)
	}
	line[0] = 'y' // the logger reuses its buffer
	if got := <-s.lines; string(got) != "x\n" {
		t.Fatalf("buffered line %q changed with the logger's buffer", got)
	}
	long := &monitorSink{lines: make(chan []byte, 1)}
	_, _ = long.Write(bytes.Repeat([]byte("z"), 3*maxMonitorLine))
	if got := <-long.lines; len(got) > maxMonitorLine+8 || !strings.HasSuffix(string(got), "…\n") {
		t.Fatalf("a long line is kept as %d bytes ending %q", len(got), got[len(got)-4:])
	}
}

// stalledWriter is a caller that stops reading: its first Write of a body
// line blocks until release closes.
type stalledWriter struct {
	header  http.Header
	mu      sync.Mutex
	body    bytes.Buffer
	flushed chan struct{} // closed at the first Flush (the headers)
	writing chan struct{} // closed when the first Write blocks
	release chan struct{}
	once    sync.Once
	wonce   sync.Once
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              { w.once.Do(func() { close(w.flushed) }) }
func (w *stalledWriter) Write(p []byte) (int, error) {
	w.wonce.Do(func() { close(w.writing) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}

// TestMonitorSlowReaderDropsAndCounts: while the caller is not reading,
// the log goes on and the monitor holds at most its buffer; the lines it
// dropped are counted, and the count is logged when the monitor ends.
func TestMonitorSlowReaderDropsAndCounts(t *testing.T) {
	var out testlog.Buffer
	root := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.Warn, Output: &out})
	o := &opsHandler{logs: NewLogStream(root), log: root.Named("http")}
	w := &stalledWriter{header: http.Header{}, flushed: make(chan struct{}), writing: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest(http.MethodGet, "/v1/agent/monitor?loglevel=info", nil).WithContext(ctx)
	done := make(chan error, 1)
	go func() { done <- o.agentMonitor(&call{w: w, r: r}) }()
	<-w.flushed // the sink is registered
	app := root.Named("app")
	app.Info("first")
	<-w.writing // the monitor is stuck sending it
	const more = monitorBuffer + 88
	for i := range more {
		app.Info(fmt.Sprintf("line %d", i))
	}
	app.Debug("below the monitor's level")
	cancel()
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(w.body.String(), "[INFO]  app: "); got != 1+monitorBuffer {
		t.Errorf("%d lines sent, want the first and %d buffered", got, monitorBuffer)
	}
	if strings.Contains(w.body.String(), "below the monitor") {
		t.Error("a line below the monitor's level was sent")
	}
	if log := out.String(); !strings.Contains(log, "Dropped logs during monitor request") || !strings.Contains(log, "dropped_count=88") {
		t.Errorf("the drop count is not logged: %q", log)
	}
	if o.logs.watched() {
		t.Error("the monitor's sink is still registered after it ended")
	}
}

// TestLogURL: token values are hidden however they are encoded, and the
// rest of the URL is left as sent.
func TestLogURL(t *testing.T) {
	for raw, want := range map[string]string{
		"/v1/kv/a":                        "/v1/kv/a",
		"/v1/kv/a?token=s3cret&recurse":   "/v1/kv/a?token=<hidden>&recurse",
		"/v1/kv/a?x=1&token=a%2Fb&token=": "/v1/kv/a?x=1&token=<hidden>&token=<hidden>",
		"/v1/kv/a?to%6Ben=s3cret":         "/v1/kv/a?to%6Ben=<hidden>",
		"/v1/kv/a?token":                  "/v1/kv/a?token=<hidden>",
		"/v1/kv/a%20b?tokens=keep":        "/v1/kv/a%20b?tokens=keep",
	} {
		r := httptest.NewRequest(http.MethodGet, raw, nil)
		if got := logURL(r.URL); got != want {
			t.Errorf("%s: logged as %s, want %s", raw, got, want)
		}
	}
}
