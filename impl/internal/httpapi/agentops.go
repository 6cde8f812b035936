package httpapi

import (
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/acl"
)

// OpsOptions configure WithAgentOps.
type OpsOptions struct {
	// Logs is the agent's log, for the monitor; nil refuses monitors.
	Logs *LogStream
	// Logger receives request errors and the monitors' drop counts.
	Logger hclog.Logger
	// ACL, Authorize and Node decide who may use these endpoints (S90):
	// the host and Go's profiles (which next answers) need operator:read,
	// the monitor and /v1/agent/metrics (next's too) agent:read on Node.
	// Authorize nil allows all.
	ACL       ACLOptions
	Authorize Authorize
	Node      string
}

type opsHandler struct {
	logs *LogStream
	log  hclog.Logger
	opts OpsOptions
}

// allowed decides a permission for an ops endpoint; nil with ACLs off.
func (o *opsHandler) allowed(c *call, r acl.Resource, name string, need acl.Access) error {
	if !o.opts.ACL.enabled() || o.opts.Authorize == nil {
		return nil
	}
	return aclFailure(o.opts.Authorize(c.r, r, name, need))
}

// WithAgentOps serves the agent's operational endpoints, which every agent
// answers for itself and never forwards: GET /v1/agent/host (the host's
// resources) and GET /v1/agent/monitor (its log, streamed). Every other
// request goes to next.
func WithAgentOps(next http.Handler, opts OpsOptions) http.Handler {
	o := &opsHandler{logs: opts.Logs, log: opts.Logger, opts: opts}
	if o.log == nil {
		o.log = hclog.NewNullLogger()
	}
	routes := o.routeTable()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent/metrics" && r.Method == http.MethodGet {
			// Answered by next; decided here, where the agent's ACLs are.
			if err := o.allowed(&call{w: w, r: r}, acl.ResourceAgent, opts.Node, acl.AccessRead); err != nil {
				logRequestError(o.log, r, err)
				writeError(w, err)
				return
			}
		}
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			// Go's profiles (next serves them when enabled) need
			// operator:read; Consul refuses with no reason given.
			if o.allowed(&call{w: w, r: r}, acl.ResourceOperator, "", acl.AccessRead) != nil {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusForbidden)
				return
			}
		}
		if !serveRoute(routes, w, r, o.log) {
			next.ServeHTTP(w, r)
		}
	})
}

// routeTable is the operational endpoints the agent answers itself;
// /v1/agent/metrics and /debug/pprof/ are decided here and answered by the
// handler behind.
func (o *opsHandler) routeTable() []route {
	routes := []route{
		{"/v1/agent/host", false, []string{get}, func(c *call) error {
			if err := o.allowed(c, acl.ResourceOperator, "", acl.AccessRead); err != nil {
				return err // S90
			}
			return agentHost(c)
		}},
		{"/v1/agent/monitor", false, []string{get}, o.agentMonitor},
	}
	return routes
}
