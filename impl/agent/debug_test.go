package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestAgentMetricsAndDebug: /v1/agent/metrics answers Consul's summary
// shape, with raft's timers once raft has worked; /debug/pprof/ is served
// only with enable_debug.
func TestAgentMetricsAndDebug(t *testing.T) {
	sink, err := agent.NewTelemetry(agent.TelemetryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sink.Stop)
	plain := agenttest.StartDevAgent(t, func(c *agent.Config) { c.Telemetry = sink })
	code, body := get(t, "http://"+plain.HTTPAddr()+"/v1/agent/metrics")
	var summary struct {
		Timestamp string
		Gauges    []struct{ Name string }
		Counters  []struct{ Name string }
		Samples   []struct{ Name string }
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &summary) != nil || summary.Timestamp == "" {
		t.Fatalf("GET /v1/agent/metrics: %d %q", code, body)
	}
	// Prometheus is refused as Consul without prometheus_retention_time
	// refuses it: 200, no body, the reason in X-Consul-Reason; asked by
	// query or by Accept header.
	for _, accept := range []string{"", "application/openmetrics-text; version=1.0.0", "text/plain; version=0.4.0"} {
		url := "http://" + plain.HTTPAddr() + "/v1/agent/metrics"
		if accept == "" {
			url += "?format=prometheus"
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(b) != 0 || !strings.Contains(resp.Header.Get("X-Consul-Reason"), "Prometheus is not enabled") {
			t.Errorf("prometheus (Accept %q): %d %q, reason %q", accept, resp.StatusCode, b, resp.Header.Get("X-Consul-Reason"))
		}
	}
	if code, body := get(t, "http://"+plain.HTTPAddr()+"/v1/agent/metrics?format=text"); code != http.StatusOK || !strings.HasPrefix(body, "{") {
		t.Errorf("another format is ignored, as by Consul: %d %.40q", code, body)
	}
	if code, _ := get(t, "http://"+plain.HTTPAddr()+"/debug/pprof/goroutine?debug=1"); code == http.StatusOK {
		t.Fatal("/debug/pprof/ served without enable_debug")
	}
	if code, _ := get(t, "http://"+agenttest.StartDevAgent(t, nil).HTTPAddr()+"/v1/agent/metrics"); code == http.StatusOK {
		t.Fatal("/v1/agent/metrics served by an agent without a sink")
	}
	debug := agenttest.StartDevAgent(t, func(c *agent.Config) { c.Debug = true })
	code, body = get(t, "http://"+debug.HTTPAddr()+"/debug/pprof/goroutine?debug=1")
	if code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("/debug/pprof/goroutine with enable_debug: %d %.80q", code, body)
	}
	// raft's own timers reach the sink: the dev agents elected themselves
	// and applied entries (the summary may need its interval to close).
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body = get(t, "http://"+plain.HTTPAddr()+"/v1/agent/metrics")
		if strings.Contains(body, "consul.raft.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consul.raft.* metric after 15 s: %.300s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
