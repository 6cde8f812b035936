package httpapi

import (
	"net/http"

	"github.com/hashicorp/go-hclog"
)

// OpsOptions configure WithAgentOps.
type OpsOptions struct {
	// Logs is the agent's log, for the monitor; nil refuses monitors.
	Logs *LogStream
	// Logger receives request errors and the monitors' drop counts.
	Logger hclog.Logger
}

type opsHandler struct {
	logs *LogStream
	log  hclog.Logger
}

// WithAgentOps serves the agent's operational endpoints, which every agent
// answers for itself and never forwards: GET /v1/agent/host (the host's
// resources) and GET /v1/agent/monitor (its log, streamed). Every other
// request goes to next.
func WithAgentOps(next http.Handler, opts OpsOptions) http.Handler {
	o := &opsHandler{logs: opts.Logs, log: opts.Logger}
	if o.log == nil {
		o.log = hclog.NewNullLogger()
	}
	routes := []route{
		{"/v1/agent/host", false, []string{get}, func(c *call) error { return agentHost(c) }},
		{"/v1/agent/monitor", false, []string{get}, o.agentMonitor},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !serveRoute(routes, w, r, o.log) {
			next.ServeHTTP(w, r)
		}
	})
}
