package agent

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// telemetry is the process's in-memory metrics sink, as every Consul agent
// keeps one: raft, memberlist and serf report into go-metrics' global
// registry, and GET /v1/agent/metrics shows the recent intervals. One per
// process, because the registry is global.
var (
	telemetryOnce sync.Once
	telemetrySink *metrics.InmemSink
)

func telemetry() *metrics.InmemSink {
	telemetryOnce.Do(func() {
		// Consul's defaults: 10 s intervals kept for a minute, names under
		// "consul" (so raft's commit time is consul.raft.commitTime, as a
		// Consul dashboard expects), no host name in them.
		telemetrySink = metrics.NewInmemSink(10*time.Second, time.Minute)
		cfg := metrics.DefaultConfig("consul")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = false
		if _, err := metrics.NewGlobal(cfg, telemetrySink); err != nil {
			// NewGlobal fails only on a bad config; metrics are then
			// dropped, which costs nothing else.
			telemetrySink = metrics.NewInmemSink(10*time.Second, time.Minute)
		}
	})
	return telemetrySink
}

// withDebug answers GET /v1/agent/metrics, and, when pprofOn (Consul's
// enable_debug, on in -dev), Go's profiles under /debug/pprof/, before
// next sees the request.
func withDebug(next http.Handler, pprofOn bool) http.Handler {
	sink := telemetry()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/agent/metrics":
			if r.Method != http.MethodGet {
				w.Header().Set("Allow", http.MethodGet)
				http.Error(w, "method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
				return
			}
			if f := r.URL.Query().Get("format"); f != "" {
				http.Error(w, "format "+f+" is not supported: tenure keeps metrics in memory only", http.StatusBadRequest)
				return
			}
			summary, err := sink.DisplayMetrics(w, r)
			if err != nil {
				http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(summary)
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
