package agent

import (
	"io"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// agentLogs is what GET /v1/agent/monitor streams, and the logger of the
// HTTP layer. An agent given an hclog InterceptLogger (as the binary
// gives one) streams everything it and its parts log. An agent given no
// logger (tests, the simulator) keeps its parts silent, as before, and
// streams only what its HTTP layer logs, through a logger that writes
// nowhere itself. Any other logger cannot be tapped: monitors are refused.
func agentLogs(logger, httpLogger hclog.Logger) (*httpapi.LogStream, hclog.Logger) {
	switch l := logger.(type) {
	case nil:
		il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
		if httpLogger == nil {
			httpLogger = il.Named("http")
		}
		return httpapi.NewLogStream(il), httpLogger
	case hclog.InterceptLogger:
		if httpLogger == nil {
			httpLogger = l.Named("http")
		}
		return httpapi.NewLogStream(l), httpLogger
	}
	if httpLogger == nil {
		httpLogger = logger.Named("http")
	}
	return nil, httpLogger
}

// withAgentOps puts in front of api what every agent answers for itself
// besides it: /v1/agent/host and /v1/agent/monitor, /v1/agent/metrics and
// the profiles (withDebug), with every request logged as Consul logs it.
// Who may use them is decided with acl (S90): withDebug is inside the
// ops handler, which decides /v1/agent/metrics before it.
func withAgentOps(api http.Handler, logs *httpapi.LogStream, logger hclog.Logger, sink *MemSink, pprofOn bool, acl opsACL) http.Handler {
	ops := httpapi.WithAgentOps(withDebug(api, sink, pprofOn), httpapi.OpsOptions{Logs: logs, Logger: logger,
		ACL: acl.opts, Authorize: acl.authorize, Node: acl.node})
	return httpapi.WithRequestLog(ops, logger, logs)
}

// opsACL is how the agent decides its operational endpoints.
type opsACL struct {
	opts      httpapi.ACLOptions
	authorize httpapi.Authorize
	node      string
}
