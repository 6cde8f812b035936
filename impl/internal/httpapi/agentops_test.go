package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// opsServer serves the operational endpoints in front of a handler that
// answers every other path 404, logging to an intercept logger whose own
// output (at WARN) is returned.
func opsServer(t *testing.T, stream bool) (*httptest.Server, hclog.InterceptLogger, *logText) {
	t.Helper()
	out := &logText{}
	root := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.Warn, Output: out})
	var logs *httpapi.LogStream
	if stream {
		logs = httpapi.NewLogStream(root)
	}
	logger := root.Named("http")
	h := httpapi.WithRequestLog(httpapi.WithAgentOps(http.NotFoundHandler(), httpapi.OpsOptions{Logs: logs, Logger: logger}), logger, logs)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, root, out
}

// logText collects a logger's output.
type logText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logText) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// monitorLines opens a monitor and returns a function that reads its next
// line.
func monitorLines(t *testing.T, url string) (func() string, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	br := bufio.NewReader(resp.Body)
	return func() string {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("monitor: %v", err)
		}
		return line
	}, resp
}

// TestAgentMonitorStreams: a monitor streams lines at its level and above,
// below the logger's own level too, plain or as JSON; an unknown level is
// a 400 with Consul's reason.
func TestAgentMonitorStreams(t *testing.T) {
	srv, root, _ := opsServer(t, true)
	next, resp := monitorLines(t, srv.URL+"/v1/agent/monitor?loglevel=debug")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("monitor: %d", resp.StatusCode)
	}
	nextJSON, _ := monitorLines(t, srv.URL+"/v1/agent/monitor?loglevel=WARN&logjson")
	app := root.Named("app")
	app.Trace("below debug")
	app.Debug("registered", "service", "redis")
	app.Warn("careful")
	if line := next(); !strings.Contains(line, "[DEBUG] app: registered: service=redis") {
		t.Errorf("first plain line %q", line)
	}
	if line := next(); !strings.Contains(line, "[WARN]  app: careful") {
		t.Errorf("second plain line %q", line)
	}
	var entry map[string]any
	if line := nextJSON(); json.Unmarshal([]byte(line), &entry) != nil || entry["@message"] != "careful" || entry["@level"] != "warn" {
		t.Errorf("JSON line %q", line)
	}

	for _, level := range []string{"bogus", "off"} {
		resp, err := http.Get(srv.URL + "/v1/agent/monitor?loglevel=" + level)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || string(b) != "Unknown log level: "+level {
			t.Errorf("loglevel=%s: %d %q", level, resp.StatusCode, b)
		}
	}
}

// TestRequestErrorsLogged: a refused (4xx) or failed (5xx) request is
// logged at ERROR with its method, URL, caller and reason, a token in the
// URL hidden; requests are logged at DEBUG as finished only where someone
// sees them (a monitor here).
func TestRequestErrorsLogged(t *testing.T) {
	srv, _, out := opsServer(t, false)
	for _, path := range []string{"/v1/agent/monitor?token=s3cret-token&loglevel=nope", "/v1/agent/monitor?token=s3cret-token"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Post(srv.URL+"/v1/agent/host", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	log := out.String()
	for _, want := range []string{
		`[ERROR] http: Request error: method=GET url="/v1/agent/monitor?token=<hidden>&loglevel=nope" from=127.0.0.1:`,
		`error="Unknown log level: nope"`,
		`[ERROR] http: Request error: method=GET url=/v1/agent/monitor?token=<hidden> from=127.0.0.1:`,
		`error="Streaming logs is not supported by this agent's logger"`,
		`[ERROR] http: Request error: method=POST url=/v1/agent/host`,
		`error="method POST not allowed"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "s3cret") {
		t.Errorf("the token reached the log:\n%s", log)
	}
	if strings.Contains(log, "Request finished") {
		t.Errorf("a request was logged as finished at DEBUG by a WARN logger:\n%s", log)
	}

	// With a monitor watching, finished requests are logged for it.
	srv, _, _ = opsServer(t, true)
	next, _ := monitorLines(t, srv.URL+"/v1/agent/monitor?loglevel=debug")
	resp, err = http.Get(srv.URL + "/v1/kv/x?token=other-secret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if line := next(); !strings.Contains(line, `[DEBUG] http: Request finished: method=GET url=/v1/kv/x?token=<hidden> from=`) {
		t.Errorf("monitor line %q", line)
	}
}

// TestAgentHost: /v1/agent/host answers Consul's shape, with the time of
// collection always set.
func TestAgentHost(t *testing.T) {
	srv, _, _ := opsServer(t, true)
	resp, err := http.Get(srv.URL + "/v1/agent/host")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var host map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&host); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("host: %d %v", resp.StatusCode, err)
	}
	for _, k := range []string{"Memory", "CPU", "Host", "Disk", "CollectionTime", "Errors"} {
		if _, ok := host[k]; !ok {
			t.Errorf("host lacks %s: %v", k, host)
		}
	}
	var ct int64
	if json.Unmarshal(host["CollectionTime"], &ct) != nil || ct <= 0 {
		t.Errorf("CollectionTime %s", host["CollectionTime"])
	}
	var mem struct{ Total uint64 }
	if string(host["Memory"]) != "null" && (json.Unmarshal(host["Memory"], &mem) != nil || mem.Total == 0) {
		t.Errorf("Memory %s", host["Memory"])
	}
}
