package httpapi

import (
	"io"
	"net/http"

	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// origin is the node of the agent the client talked to: the one a client
// agent or a follower named when it forwarded the request over the server
// port (rpc.Origin, set by them, never read from a header), else this
// server. Consul uses it wherever it means "the agent's node": a session's
// default Node (S2), agent check updates (S48).
func (h *handler) origin(c *call) string {
	if o, ok := rpc.OriginFrom(c.r.Context()); ok && o.Node != "" {
		return o.Node
	}
	return h.b.NodeName()
}

// forwarded reports whether another server forwarded this request here. It
// is never forwarded again, so two servers that each believe the other
// leads cannot pass a request back and forth.
func forwarded(r *http.Request) bool {
	o, _ := rpc.OriginFrom(r.Context())
	return o.Forwarded
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
	case !known || addr == "" || forwarded(c.r):
		return false, errorf(http.StatusInternalServerError, "%s", noLeader)
	}
	return false, h.forward(c, addr, body)
}

// forward sends the request to the leader's server port as coming from
// origin, and writes the leader's answer.
func (h *handler) forward(c *call, addr string, body []byte) error {
	if h.opts.Forward == nil {
		return errorf(http.StatusInternalServerError, "forward to leader %s: no forwarder configured", addr)
	}
	req, err := forwardRequest(c.r, rpc.Origin{Node: h.origin(c), Forwarded: true}, body)
	if err != nil {
		return err
	}
	carryToken(req, h.opts.ACL)
	resp, err := h.opts.Forward.Forward(c.r.Context(), addr, req)
	if err != nil {
		if callerGone(c.r) {
			h.opts.Logger.Debug("caller went away", "leader", addr, "path", c.r.URL.Path)
			return nil
		}
		h.opts.Logger.Warn("forward to leader failed", "leader", addr, "path", c.r.URL.Path, "error", err)
		return errorf(http.StatusInternalServerError, "forward to leader %s: %v", addr, err)
	}
	logForwardedError(h.opts.Logger, c.r, resp)
	writeForwarded(c.w, resp)
	return nil
}

// callerToken is the ACL token of r's caller: the one its Origin carries
// when another agent forwarded r here (read there, passed on unchanged),
// else the one r itself presents (rpc.RequestToken).
func callerToken(r *http.Request) string {
	if o, ok := rpc.OriginFrom(r.Context()); ok {
		return o.Token
	}
	return rpc.RequestToken(r)
}

// forwardRequest is r as a forwarded request from origin, carrying its
// caller's token (callerToken). body is r's body
// if a handler has already read it; otherwise it is read here, up to
// rpc.MaxRequestBody (above every limit the API itself applies, so the
// server that serves it still answers with its own limit's words).
func forwardRequest(r *http.Request, origin rpc.Origin, body []byte) (*rpc.Request, error) {
	if body == nil && r.Body != nil {
		var err error
		body, err = readSized(r.Body, r.ContentLength, rpc.MaxRequestBody+1)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "read body: %v", err)
		}
		if len(body) > rpc.MaxRequestBody {
			return nil, bodyOver(rpc.MaxRequestBody)(int64(len(body)))
		}
	}
	// Made only when there is a header to keep: a nil header is framed as
	// an empty one.
	var hdr http.Header
	for _, k := range rpc.ForwardedHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			if hdr == nil {
				hdr = make(http.Header, len(rpc.ForwardedHeaders))
			}
			hdr[k] = v
		}
	}
	origin.Token = callerToken(r)
	if wantsSourceIP(r.URL.Path) {
		origin.SourceIP = callerSourceIP(r)
	}
	return &rpc.Request{Origin: origin, Method: r.Method, URI: r.URL.RequestURI(), Header: hdr, Body: body}, nil
}

// readSized is io.ReadAll(io.LimitReader(body, limit)), with the buffer
// made at once when the request says how long its body is. size is only a
// hint (HTTP's server ends a body there, other callers may not): a longer
// body is still read, up to limit, and never a byte past it.
func readSized(body io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size >= limit {
		return io.ReadAll(io.LimitReader(body, limit))
	}
	// One byte more than promised, so that the end is seen without growing.
	b := make([]byte, 0, size+1)
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as ReadAll would
		}
		room := b[len(b):min(int64(cap(b)), limit)]
		n, err := body.Read(room)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// writeForwarded writes a forwarded request's answer as this server's.
func writeForwarded(w http.ResponseWriter, resp *rpc.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// callerGone says whether r's caller has hung up, which ends a forwarded
// request with an error that says nothing of the server.
func callerGone(r *http.Request) bool { return r.Context().Err() != nil }
