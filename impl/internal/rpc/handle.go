package rpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
)

// handle runs h on req as if req had arrived over HTTP, with ctx (carrying
// req.Origin) as the request's context, and returns what h wrote. An answer
// over maxResponseBody becomes a 500.
func handle(ctx context.Context, h http.Handler, req *Request) *Response {
	w := &capture{header: http.Header{}}
	if resp := serve(ctx, h, req, w); resp != nil {
		return resp
	}
	return &Response{Status: w.status, Header: w.sent, Body: w.body}
}

// serve runs h on req, writing to w; a non-nil answer replaces what w holds.
func serve(ctx context.Context, h http.Handler, req *Request, w *capture) *Response {
	r, err := newRequest(ctx, req)
	if err != nil {
		return errorResponse(http.StatusBadRequest, fmt.Sprintf("forwarded request: %v", err))
	}
	h.ServeHTTP(w, r)
	if w.over {
		return errorResponse(http.StatusInternalServerError,
			fmt.Sprintf("answer over %d bytes is too large to forward", maxResponseBody))
	}
	w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
	return nil
}

// newRequest is req as an incoming *http.Request. It is built here rather
// than by http.NewRequestWithContext, which parses a URL of its own, makes a
// header map that is replaced at once and wraps the body twice; what a
// handler can see is the same.
func newRequest(ctx context.Context, req *Request) (*http.Request, error) {
	// The URI is parsed as an HTTP server parses a request line, so that a
	// handler sees the same URL either way ("//x" is a path, not a host).
	u, err := url.ParseRequestURI(req.URI)
	if err != nil {
		return nil, err
	}
	if !validMethod(req.Method) {
		// NewRequestWithContext's words, which a caller saw before.
		return nil, fmt.Errorf("net/http: invalid method %q", req.Method)
	}
	var body io.ReadCloser = http.NoBody
	if len(req.Body) > 0 {
		body = &bodyReader{Reader: *bytes.NewReader(req.Body)}
	}
	hdr := req.Header
	if hdr == nil {
		hdr = http.Header{}
	}
	r := &http.Request{Method: req.Method, URL: u, RequestURI: req.URI, Proto: "HTTP/1.1", ProtoMajor: 1,
		ProtoMinor: 1, Header: hdr, Body: body, ContentLength: int64(len(req.Body))}
	return r.WithContext(withOrigin(ctx, req.Origin)), nil
}

// bodyReader is a forwarded request's body: one allocation where
// io.NopCloser(bytes.NewReader(b)) is two.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// validMethod is net/http's test of a method: a non-empty token.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := range len(m) {
		c := m[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		switch c {
		case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
			continue
		}
		return false
	}
	return true
}

func errorResponse(status int, msg string) *Response {
	return &Response{Status: status, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
		Body: []byte(msg)}
}

// capture is the http.ResponseWriter of a forwarded request: it keeps the
// answer for the response frame, up to maxResponseBody.
type capture struct {
	header http.Header
	status int
	body   []byte
	over   bool

	// What is sent is the header as it was at WriteHeader: what the
	// handler sets later is not sent, as over HTTP. handle keeps a copy
	// (sent); the server encodes it at once instead (head, or the error
	// that it cannot be encoded), which it would do anyway to send it.
	encode  bool
	sent    http.Header
	head    []byte
	headErr error
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status != 0 {
		return
	}
	c.status = status
	if c.encode {
		c.head, c.headErr = appendResponseHead(c.head[:0], status, c.header)
	} else {
		c.sent = c.header.Clone()
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if err := c.room(len(p)); err != nil {
		return 0, err
	}
	c.body = append(c.body, p...)
	return len(p), nil
}

// WriteString spares io.WriteString's copy of s into a new slice.
func (c *capture) WriteString(s string) (int, error) {
	if err := c.room(len(s)); err != nil {
		return 0, err
	}
	c.body = append(c.body, s...)
	return len(s), nil
}

// room sends the header if it is not yet sent and refuses n more bytes of
// body past maxResponseBody, marking the answer as over.
func (c *capture) room(n int) error {
	c.WriteHeader(http.StatusOK)
	if len(c.body)+n > maxResponseBody {
		c.over = true
		return fmt.Errorf("forwarded answer over %d bytes", maxResponseBody)
	}
	return nil
}

// Answer is the server's reply to a Forward.Request: what the handler
// wrote, already encoded for the frame. It is exported only because net/rpc
// wants reply types that are; the pool decodes answers into a Response.
type Answer struct {
	resp *Response // an answer made here (an error); else w holds it
	w    *capture
}

// maxPooledBody is the largest body buffer a capture keeps for the next
// request: larger answers (a big KV listing) are rare, and their memory is
// given back.
const maxPooledBody = 64 << 10

var capturePool = sync.Pool{New: func() any { return &capture{encode: true} }}

// serveAnswer runs h on req for the server.
func serveAnswer(ctx context.Context, h http.Handler, req *Request, a *Answer) {
	w := capturePool.Get().(*capture)
	w.header = http.Header{}
	if resp := serve(ctx, h, req, w); resp != nil {
		w.release()
		*a = Answer{resp: resp}
		return
	}
	*a = Answer{w: w}
}

// release gives a's buffers back once its frame is written: net/rpc drops
// the reply then, and the handler that wrote it has returned.
func (a *Answer) release() {
	if a.w != nil {
		a.w.release()
		a.w = nil
	}
}

func (c *capture) release() {
	body := c.body[:0]
	if cap(body) > maxPooledBody {
		body = nil
	}
	*c = capture{encode: true, head: c.head[:0], body: body}
	capturePool.Put(c)
}

// appendTo appends a's frame payload (without the body) to b and returns
// the body.
func (a *Answer) appendTo(b []byte) ([]byte, []byte, error) {
	if a.w == nil {
		b, err := appendResponse(b, a.resp)
		return b, a.resp.Body, err
	}
	if a.w.headErr != nil {
		return b, nil, a.w.headErr
	}
	b = append(b, a.w.head...)
	return binaryAppendLen(b, len(a.w.body)), a.w.body, nil
}
