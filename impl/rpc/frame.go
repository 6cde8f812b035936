package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Request is one forwarded HTTP request.
type Request struct {
	Origin Origin
	Method string
	// URI is the request's path and raw query, as sent by the client.
	URI    string
	Header http.Header
	Body   []byte
}

// Response is the answer to a Request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ForwardedHeaders are the request headers a forwarded request keeps. The
// handlers read none of them today; they are the ones Consul's servers read
// (the ACL token, which Consul takes from X-Consul-Token or an
// "Authorization: Bearer" header, and the body's type), kept so that
// forwarding does not change what a handler could see. Everything else a
// client sends (among it any X-Tenure-* header) stays on the first hop.
var ForwardedHeaders = []string{"Content-Type", "X-Consul-Token", "Authorization"}

// Bounds of a frame. MaxRequestBody is above every request body limit of
// the HTTP API (the largest is a catalog register's 1 MiB), so that a body
// the API would refuse is still refused by the API, with its own words.
// MaxResponseBody bounds an answer: a KV listing of a large tree can be big,
// a frame larger than this is refused rather than held in memory.
const (
	MaxRequestBody  = 2 << 20
	MaxResponseBody = 64 << 20
	maxNodeLen      = 1 << 10
	maxMethodLen    = 16
	maxURILen       = 64 << 10
	maxHeaders      = 64
	maxHeaderName   = 256
	maxHeaderValue  = 8 << 10
	// The fixed part of a frame around its body: every string at its bound.
	maxFrameOverhead = 16 + maxNodeLen + maxMethodLen + maxURILen + maxHeaders*(maxHeaderName+maxHeaderValue+8)
	frameVersion     = 1
)

// ErrFrame is wrapped by every error about a malformed or oversized frame.
var ErrFrame = errors.New("bad rpc frame")

func frameErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFrame, fmt.Sprintf(format, args...))
}

// EncodeRequest is r's frame payload (without the length prefix).
func EncodeRequest(r *Request) ([]byte, error) {
	if len(r.Body) > MaxRequestBody {
		return nil, frameErr("request body of %d bytes is over %d", len(r.Body), MaxRequestBody)
	}
	var flags byte
	if r.Origin.Forwarded {
		flags = 1
	}
	b := []byte{frameVersion, flags}
	var err error
	for _, s := range []struct {
		v     string
		limit int
		what  string
	}{{r.Origin.Node, maxNodeLen, "origin"}, {r.Method, maxMethodLen, "method"}, {r.URI, maxURILen, "URI"}} {
		if b, err = putString(b, s.v, s.limit, s.what); err != nil {
			return nil, err
		}
	}
	if b, err = putHeader(b, r.Header); err != nil {
		return nil, err
	}
	return binary.AppendUvarint(b, uint64(len(r.Body))), nil
}

// DecodeRequest parses a request payload; a malformed one is an error
// wrapping ErrFrame.
func DecodeRequest(p []byte) (*Request, error) {
	d := decoder{p: p}
	if v := d.byte(); v != frameVersion {
		return nil, d.fail(frameErr("request version %d", v))
	}
	flags := d.byte()
	if flags > 1 {
		return nil, d.fail(frameErr("request flags %#x", flags))
	}
	r := &Request{Origin: Origin{Forwarded: flags == 1}}
	r.Origin.Node = d.string(maxNodeLen, "origin")
	r.Method = d.string(maxMethodLen, "method")
	r.URI = d.string(maxURILen, "URI")
	r.Header = d.header()
	r.Body = d.body(MaxRequestBody)
	if d.err != nil {
		return nil, d.err
	}
	if r.Method == "" || r.URI == "" || r.URI[0] != '/' {
		return nil, frameErr("request needs a method and a URI starting with /")
	}
	return r, nil
}

// EncodeResponse is r's frame payload (without the length prefix).
func EncodeResponse(r *Response) ([]byte, error) {
	if len(r.Body) > MaxResponseBody {
		return nil, frameErr("response body of %d bytes is over %d", len(r.Body), MaxResponseBody)
	}
	if r.Status < 100 || r.Status > 999 {
		return nil, frameErr("status %d", r.Status)
	}
	b := binary.AppendUvarint([]byte{frameVersion}, uint64(r.Status))
	b, err := putHeader(b, r.Header)
	if err != nil {
		return nil, err
	}
	return binary.AppendUvarint(b, uint64(len(r.Body))), nil
}

// DecodeResponse parses a response payload.
func DecodeResponse(p []byte) (*Response, error) {
	d := decoder{p: p}
	if v := d.byte(); v != frameVersion {
		return nil, d.fail(frameErr("response version %d", v))
	}
	status := d.uvarint()
	if d.err == nil && (status < 100 || status > 999) {
		return nil, frameErr("status %d", status)
	}
	r := &Response{Status: int(status)}
	r.Header = d.header()
	r.Body = d.body(MaxResponseBody)
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// The encoders end with the body's length and leave the body out:
// writeFrame appends it once, where a payload holding it would be copied
// twice.

func putString(b []byte, s string, limit int, what string) ([]byte, error) {
	if len(s) > limit {
		return nil, frameErr("%s of %d bytes is over %d", what, len(s), limit)
	}
	return append(binary.AppendUvarint(b, uint64(len(s))), s...), nil
}

func putHeader(b []byte, h http.Header) ([]byte, error) {
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	if n > maxHeaders {
		return nil, frameErr("%d header values, over %d", n, maxHeaders)
	}
	b = binary.AppendUvarint(b, uint64(n))
	var err error
	for k, vs := range h {
		for _, v := range vs {
			if b, err = putString(b, k, maxHeaderName, "header name"); err != nil {
				return nil, err
			}
			if b, err = putString(b, v, maxHeaderValue, "header value"); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// decoder reads a payload, keeping the first error; every read after an
// error returns a zero value.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(err error) error {
	if d.err == nil {
		d.err = err
	}
	return d.err
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.p) == 0 {
		d.fail(frameErr("truncated"))
		return 0
	}
	c := d.p[0]
	d.p = d.p[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.fail(frameErr("bad length"))
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) string(limit int, what string) string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(limit) || n > uint64(len(d.p)) {
		d.fail(frameErr("%s of %d bytes (limit %d, %d left)", what, n, limit, len(d.p)))
		return ""
	}
	s := string(d.p[:n])
	d.p = d.p[n:]
	return s
}

func (d *decoder) header() http.Header {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > maxHeaders {
		d.fail(frameErr("%d header values, over %d", n, maxHeaders))
		return nil
	}
	h := http.Header{}
	for range n {
		k := d.string(maxHeaderName, "header name")
		v := d.string(maxHeaderValue, "header value")
		if d.err != nil {
			return nil
		}
		h[k] = append(h[k], v)
	}
	return h
}

// body is the rest of the payload, which must be exactly as long as its
// length says.
func (d *decoder) body(limit int) []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) || n != uint64(len(d.p)) {
		d.fail(frameErr("body of %d bytes (limit %d, %d left)", n, limit, len(d.p)))
		return nil
	}
	if n == 0 {
		return nil
	}
	return d.p
}

// readFrame reads one length-prefixed frame of at most limit bytes.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("read rpc frame: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if uint64(size) > uint64(limit) {
		return nil, frameErr("frame of %d bytes is over %d", size, limit)
	}
	p := make([]byte, size)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("read rpc frame: %w", err)
	}
	return p, nil
}

const (
	maxRequestFrame  = MaxRequestBody + maxFrameOverhead
	maxResponseFrame = MaxResponseBody + maxFrameOverhead
)
