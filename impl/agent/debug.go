package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// NewTelemetry installs an in-memory metrics sink (MemSink) as go-metrics'
// global registry, as every Consul agent keeps one: raft, memberlist and
// serf report into it, and GET /v1/agent/metrics (Config.Telemetry) shows
// its recent intervals. Call it once per process, from main: the registry
// is global, and a sink used from more than one synctest bubble (the
// simulator's runs) would crash, so tests and the simulator go without.
func NewTelemetry() (*MemSink, error) {
	// Consul's defaults: 10 s intervals kept for a minute, names under
	// "consul" (raft's commit time is consul.raft.commitTime, as a Consul
	// dashboard expects), no host name in them. The sink adds the "consul"
	// part itself: as go-metrics' service name it would be put in front of
	// every key in a new slice, per sample.
	sink := newMemSink("consul", 10*time.Second, time.Minute, time.Now)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	if _, err := metrics.NewGlobal(cfg, sink); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return sink, nil
}

// withDebug answers GET /v1/agent/metrics when the agent has a sink, and,
// when pprofOn (Consul's enable_debug, on in -dev), Go's profiles under
// /debug/pprof/, before next sees the request.
func withDebug(next http.Handler, sink *MemSink, pprofOn bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case sink != nil && r.URL.Path == "/v1/agent/metrics":
			if r.Method != http.MethodGet {
				w.Header().Set("Allow", http.MethodGet)
				http.Error(w, "method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
				return
			}
			if f := r.URL.Query().Get("format"); f != "" {
				http.Error(w, "format "+f+" is not supported: tenure keeps metrics in memory only", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(sink.summary())
		case pprofOn && strings.HasPrefix(r.URL.Path, "/debug/pprof/"):
			servePprof(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func servePprof(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}
