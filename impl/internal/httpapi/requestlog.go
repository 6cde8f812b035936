package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// Requests are logged as Consul's agent logs them (its agent/http.go): a
// refused or failed request at ERROR as "Request error" with the method,
// the URL with any token redacted, the caller's address and the reason (at
// INFO as "Request cancelled" when the caller had gone), and every request
// at DEBUG as "Request finished" with its latency.

// redacted stands in for a secret in a logged URL, as in Consul's logs.
const redacted = "<hidden>"

// maxLoggedReason bounds the reason taken from a forwarded answer's body.
const maxLoggedReason = 512

// logURL is u as a log shows it: the value of every token query
// parameter replaced by <hidden>. It works on the raw query, so a token
// however encoded is hidden, and leaves the rest as the caller sent it.
func logURL(u *url.URL) string {
	s := u.EscapedPath()
	if u.RawQuery == "" {
		if u.ForceQuery {
			s += "?"
		}
		return s
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		rawKey, _, _ := strings.Cut(p, "=")
		if key, err := url.QueryUnescape(rawKey); err == nil && key == "token" || rawKey == "token" {
			parts[i] = rawKey + "=" + redacted
		}
	}
	return s + "?" + strings.Join(parts, "&")
}

// logRequestError logs a request answered with err.
func logRequestError(logger hclog.Logger, r *http.Request, err error) {
	if r.Context().Err() != nil {
		logger.Info("Request cancelled", "method", r.Method, "url", logURL(r.URL), "from", r.RemoteAddr, "error", err)
		return
	}
	logger.Error("Request error", "method", r.Method, "url", logURL(r.URL), "from", r.RemoteAddr, "error", err)
}

// logForwardedError logs a forwarded request that another server refused
// or failed, with its answer's text as the reason, as this agent would
// have logged it had it answered itself. An answer without text (a
// missing key's 404) is not an error.
func logForwardedError(logger hclog.Logger, r *http.Request, resp *rpc.Response) {
	if resp.Status < http.StatusBadRequest || len(resp.Body) == 0 {
		return
	}
	reason := string(resp.Body[:min(len(resp.Body), maxLoggedReason)])
	logRequestError(logger, r, &apiError{status: resp.Status, msg: strings.TrimSpace(reason)})
}

// WithRequestLog logs every request next answers at DEBUG, as "Request
// finished" with its latency. The line is only built when someone can
// see it: the logger is at DEBUG or a monitor is streaming (logs).
func WithRequestLog(next http.Handler, logger hclog.Logger, logs *LogStream) http.Handler {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		if logger.IsDebug() || logs.watched() {
			logger.Debug("Request finished", "method", r.Method, "url", logURL(r.URL), "from", r.RemoteAddr,
				"latency", time.Since(start).String())
		}
	})
}
