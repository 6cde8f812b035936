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

// TelemetryOptions are the telemetry settings tenure honours.
type TelemetryOptions struct {
	// DisableHostname leaves the host name out of gauge names (Consul's
	// telemetry.disable_hostname); by default a gauge is named
	// consul.<host>.<key>, as Consul names it.
	DisableHostname bool
	// RuntimeInterval is how often the Go runtime's statistics are taken
	// (go-metrics' ProfileInterval); default 1 s, as in Consul.
	RuntimeInterval time.Duration
}

// NewTelemetry installs an in-memory metrics sink (MemSink) as go-metrics'
// global registry, as every Consul agent keeps one: raft, memberlist and
// serf report into it, the Go runtime's statistics (consul.<host>.runtime.*)
// every second, and GET /v1/agent/metrics (Config.Telemetry) shows its
// recent intervals. Call it once per process, from main, and Stop the sink
// when done: the registry is global, and a sink used from more than one
// synctest bubble (the simulator's runs) would crash, so tests and the
// simulator go without.
func NewTelemetry(opts TelemetryOptions) (*MemSink, error) {
	// Consul's defaults: 10 s intervals kept for a minute, names under
	// "consul" (raft's commit time is consul.raft.commitTime, as a Consul
	// dashboard expects), the host name in gauges' names. The sink adds
	// the "consul" part itself: as go-metrics' service name it would be
	// put in front of every key in a new slice, per sample.
	sink := newMemSink("consul", 10*time.Second, time.Minute, time.Now)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname = !opts.DisableHostname
	// go-metrics' own runtime loop never ends; the sink runs one it can
	// stop, which emits the same statistics.
	cfg.EnableRuntimeMetrics = false
	m, err := metrics.NewGlobal(cfg, sink)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	every := opts.RuntimeInterval
	if every <= 0 {
		every = cfg.ProfileInterval
	}
	sink.startRuntimeStats(m, every)
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
			if wantsPrometheus(r) {
				// Consul without prometheus_retention_time (tenure has no
				// Prometheus sink) sets this reason and, as its handler
				// returns no body, answers 200 with nothing in it.
				w.Header().Set("X-Consul-Reason", "Prometheus is not enabled since its retention time is not positive")
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

// wantsPrometheus reports whether r asks for the Prometheus exposition
// format, as Consul decides it: ?format=prometheus, or an Accept header
// naming OpenMetrics or text/plain version 0.4.0.
func wantsPrometheus(r *http.Request) bool {
	if r.URL.Query().Get("format") == "prometheus" {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mime, params, _ := strings.Cut(part, ";")
		switch strings.ToLower(strings.TrimSpace(mime)) {
		case "application/openmetrics-text":
			return true
		case "text/plain":
			if first, _, _ := strings.Cut(params, ";"); strings.TrimSpace(first) == "version=0.4.0" {
				return true
			}
		}
	}
	return false
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
