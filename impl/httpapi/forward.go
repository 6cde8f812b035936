package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// forwardedHeader marks a request one follower forwarded to the leader, and
// names the follower's node: the leader uses it wherever Consul uses "the
// agent's node" (a session's default Node, S2; agent check updates, S48). A
// request carrying it is never forwarded again, so two servers that each
// believe the other leads cannot bounce a request forever.
const forwardedHeader = "X-Tenure-Forwarded-By"

// origin is the node of the agent the client talked to: a client agent
// (agentHeader), a follower that forwarded (forwardedHeader), or this server.
func (h *handler) origin(c *call) string {
	if n := c.r.Header.Get(forwardedHeader); n != "" {
		return n
	}
	if n := c.r.Header.Get(agentHeader); n != "" {
		return n
	}
	return h.b.NodeName()
}

// readHere decides where a read runs. Stale reads run on any server unless
// ?max_stale says this one has been out of touch too long; other reads run on
// the leader. When the answer is false the request was forwarded (with
// body, if the handler already consumed it).
func (h *handler) readHere(c *call, q queryOpts, body []byte) (bool, error) {
	if q.mode == modeStale && (q.maxStale == 0 || h.b.LastContact() <= q.maxStale) {
		return true, nil
	}
	return h.leaderHere(c, body)
}

// leaderHere reports whether this server leads. If not, it forwards the
// request (with body, if the handler already consumed it) to the leader and
// answers false; with no leader known it answers Consul's 500.
func (h *handler) leaderHere(c *call, body []byte) (bool, error) {
	isLeader, addr, known := h.b.Leader()
	switch {
	case isLeader:
		return true, nil
	case !known || addr == "" || c.r.Header.Get(forwardedHeader) != "":
		return false, errorf(http.StatusInternalServerError, "%s", noLeader)
	}
	return false, h.forward(c, addr, body)
}

// forward reverse-proxies the request to the leader's HTTP address.
func (h *handler) forward(c *call, addr string, body []byte) error {
	target, err := leaderURL(addr)
	if err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	origin := h.origin(c)
	r := c.r
	if body != nil {
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(forwardedHeader, origin)
		},
		Transport: h.opts.Forward,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if callerGone(r) {
				h.opts.Logger.Debug("caller went away", "leader", addr, "path", r.URL.Path)
				return
			}
			h.opts.Logger.Warn("forward to leader failed", "leader", addr, "path", r.URL.Path, "error", err)
			writeError(w, errorf(http.StatusInternalServerError, "forward to leader %s: %v", addr, err))
		},
	}
	proxy.ServeHTTP(c.w, r)
	return nil
}

// leaderURL accepts "host:port" or a full base URL.
func leaderURL(addr string) (*url.URL, error) {
	raw := addr
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad leader HTTP address %q", addr)
	}
	return u, nil
}
