package rpc

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Handle runs h on req as if req had arrived over HTTP, with ctx (carrying
// req.Origin) as the request's context, and returns what h wrote. An answer
// over MaxResponseBody becomes a 500.
func Handle(ctx context.Context, h http.Handler, req *Request) *Response {
	// The URI is parsed as an HTTP server parses a request line, so that a
	// handler sees the same URL either way ("//x" is a path, not a host).
	u, err := url.ParseRequestURI(req.URI)
	if err != nil {
		return errorResponse(http.StatusBadRequest, fmt.Sprintf("forwarded request: %v", err))
	}
	r, err := http.NewRequestWithContext(WithOrigin(ctx, req.Origin), req.Method, "/", bytes.NewReader(req.Body))
	if err != nil {
		return errorResponse(http.StatusBadRequest, fmt.Sprintf("forwarded request: %v", err))
	}
	r.URL, r.RequestURI = u, req.URI
	r.Header = req.Header
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.ContentLength = int64(len(req.Body))
	w := &capture{header: http.Header{}}
	h.ServeHTTP(w, r)
	if w.over {
		return errorResponse(http.StatusInternalServerError,
			fmt.Sprintf("answer over %d bytes is too large to forward", MaxResponseBody))
	}
	w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
	return &Response{Status: w.status, Header: w.sent, Body: w.body.Bytes()}
}

func errorResponse(status int, msg string) *Response {
	return &Response{Status: status, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
		Body: []byte(msg)}
}

// capture is the http.ResponseWriter of a forwarded request: it keeps the
// answer for the response frame, up to MaxResponseBody.
type capture struct {
	header http.Header
	sent   http.Header // header as it was at WriteHeader
	status int
	body   bytes.Buffer
	over   bool
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
		// What the handler sets later is not sent, as over HTTP.
		c.sent = c.header.Clone()
	}
}

func (c *capture) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	if c.body.Len()+len(p) > MaxResponseBody {
		c.over = true
		return 0, fmt.Errorf("forwarded answer over %d bytes", MaxResponseBody)
	}
	return c.body.Write(p)
}
