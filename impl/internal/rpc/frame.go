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
// maxResponseBody bounds an answer: a KV listing of a large tree can be big,
// a frame larger than this is refused rather than held in memory.
const (
	MaxRequestBody  = 2 << 20
	maxResponseBody = 64 << 20
	maxNodeLen      = 1 << 10
	maxTokenLen     = 8 << 10 // a header value's bound: the token came in one
	maxSourceIPLen  = 64      // an IPv6 address's text is at most 45 bytes
	maxMethodLen    = 16
	maxURILen       = 64 << 10
	maxHeaders      = 64
	maxHeaderName   = 256
	maxHeaderValue  = 8 << 10
	// The fixed part of a frame around its body: every string at its bound.
	maxFrameOverhead = 16 + maxNodeLen + maxTokenLen + maxSourceIPLen + maxMethodLen + maxURILen + maxHeaders*(maxHeaderName+maxHeaderValue+8)
	frameVersion     = 1
)

// Request flags. A request without a token or a source address is framed
// as before they travelled (flags 0 or 1), so it still parses on a server
// that predates them.
const (
	flagForwarded byte = 1 << iota // Origin.Forwarded
	flagToken                      // Origin.Token follows the origin node
	flagSourceIP                   // Origin.SourceIP follows the token
	knownFlags    = flagForwarded | flagToken | flagSourceIP
)

// errFrame is wrapped by every error about a malformed or oversized frame.
var errFrame = errors.New("bad rpc frame")

func frameErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errFrame, fmt.Sprintf(format, args...))
}

// encodeRequest is r's frame payload (without the length prefix).
func encodeRequest(r *Request) ([]byte, error) {
	return appendRequest(make([]byte, 0, requestHeadSize(r)), r)
}

// requestHeadSize is the length of r's encoding when every string is
// within its bound: the buffer is made once, not grown field by field.
func requestHeadSize(r *Request) int {
	return 2 + stringSize(r.Origin.Node) + stringSize(r.Origin.Token) + stringSize(r.Origin.SourceIP) + stringSize(r.Method) + stringSize(r.URI) +
		headerSize(r.Header) + uvarintSize(uint64(len(r.Body)))
}

// appendRequest appends r's frame payload (without the body) to b.
func appendRequest(b []byte, r *Request) ([]byte, error) {
	if len(r.Body) > MaxRequestBody {
		return nil, frameErr("request body of %d bytes is over %d", len(r.Body), MaxRequestBody)
	}
	var flags byte
	if r.Origin.Forwarded {
		flags |= flagForwarded
	}
	if r.Origin.Token != "" {
		flags |= flagToken
	}
	if r.Origin.SourceIP != "" {
		flags |= flagSourceIP
	}
	b = append(b, frameVersion, flags)
	var err error
	if b, err = putString(b, r.Origin.Node, maxNodeLen, "origin"); err != nil {
		return nil, err
	}
	if flags&flagToken != 0 {
		if b, err = putString(b, r.Origin.Token, maxTokenLen, "token"); err != nil {
			return nil, err
		}
	}
	if flags&flagSourceIP != 0 {
		if b, err = putString(b, r.Origin.SourceIP, maxSourceIPLen, "source address"); err != nil {
			return nil, err
		}
	}
	if b, err = putString(b, r.Method, maxMethodLen, "method"); err != nil {
		return nil, err
	}
	if b, err = putString(b, r.URI, maxURILen, "URI"); err != nil {
		return nil, err
	}
	if b, err = putHeader(b, r.Header); err != nil {
		return nil, err
	}
	return binary.AppendUvarint(b, uint64(len(r.Body))), nil
}

// parseRequest parses a request payload; a malformed one is an error
// wrapping errFrame.
func parseRequest(p []byte) (*Request, error) {
	return decodeRequest(p, nil)
}

// decodeRequest is parseRequest; last, when not nil, is the origin node of
// the connection's previous request, reused rather than copied again when
// it is the same (a connection carries one sender's requests).
func decodeRequest(p []byte, last *string) (*Request, error) {
	d := decoder{p: p}
	if v := d.byte(); v != frameVersion {
		return nil, d.fail(frameErr("request version %d", v))
	}
	flags := d.byte()
	if flags&^knownFlags != 0 {
		return nil, d.fail(frameErr("request flags %#x", flags))
	}
	r := &Request{Origin: Origin{Forwarded: flags&flagForwarded != 0}}
	r.Origin.Node = d.node(last)
	if flags&flagToken != 0 {
		r.Origin.Token = d.string(maxTokenLen, "token")
		if d.err == nil && r.Origin.Token == "" {
			return nil, frameErr("request flags an empty token")
		}
	}
	if flags&flagSourceIP != 0 {
		r.Origin.SourceIP = d.string(maxSourceIPLen, "source address")
		if d.err == nil && r.Origin.SourceIP == "" {
			return nil, frameErr("request flags an empty source address")
		}
	}
	r.Method = d.method()
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

// encodeResponse is r's frame payload (without the length prefix).
func encodeResponse(r *Response) ([]byte, error) {
	return appendResponse(make([]byte, 0, 1+uvarintSize(uint64(max(r.Status, 0)))+headerSize(r.Header)+
		uvarintSize(uint64(len(r.Body)))), r)
}

// appendResponse appends r's frame payload (without the body) to b.
func appendResponse(b []byte, r *Response) ([]byte, error) {
	if len(r.Body) > maxResponseBody {
		return nil, frameErr("response body of %d bytes is over %d", len(r.Body), maxResponseBody)
	}
	b, err := appendResponseHead(b, r.Status, r.Header)
	if err != nil {
		return nil, err
	}
	return binaryAppendLen(b, len(r.Body)), nil
}

// appendResponseHead appends a response's status and header to b.
func appendResponseHead(b []byte, status int, h http.Header) ([]byte, error) {
	if status < 100 || status > 999 {
		return nil, frameErr("status %d", status)
	}
	return putHeader(binary.AppendUvarint(append(b, frameVersion), uint64(status)), h)
}

func binaryAppendLen(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }

// parseResponse parses a response payload.
func parseResponse(p []byte) (*Response, error) {
	r := &Response{}
	if err := decodeResponse(p, r); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeResponse is parseResponse into r, which is left as it was on an
// error.
func decodeResponse(p []byte, r *Response) error {
	d := decoder{p: p}
	if v := d.byte(); v != frameVersion {
		return d.fail(frameErr("response version %d", v))
	}
	status := d.uvarint()
	if d.err == nil && (status < 100 || status > 999) {
		return frameErr("status %d", status)
	}
	h := d.header()
	body := d.body(maxResponseBody)
	if d.err != nil {
		return d.err
	}
	*r = Response{Status: int(status), Header: h, Body: body}
	return nil
}

// The encoders end with the body's length and leave the body out:
// writeFrame appends it once, where a payload holding it would be copied
// twice.

func uvarintSize(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func stringSize(s string) int { return uvarintSize(uint64(len(s))) + len(s) }

func headerSize(h http.Header) int {
	size, n := 0, 0
	for k, vs := range h {
		for _, v := range vs {
			size += stringSize(k) + stringSize(v)
		}
		n += len(vs)
	}
	return size + uvarintSize(uint64(n))
}

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
	return string(d.bytes(limit, what))
}

// bytes is the next string's bytes, within the payload (nil after an
// error).
func (d *decoder) bytes(limit int, what string) []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) || n > uint64(len(d.p)) {
		d.fail(frameErr("%s of %d bytes (limit %d, %d left)", what, n, limit, len(d.p)))
		return nil
	}
	b := d.p[:n:n]
	d.p = d.p[n:]
	return b
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
	h := make(http.Header, n)
	// One array holds every value; each name's slice is capped at its own
	// values, so that an append to one (a repeated name here, or a handler
	// adding a value) never writes over the next.
	vals := make([]string, n)
	for i := range vals {
		k := d.common(maxHeaderName, "header name")
		v := d.common(maxHeaderValue, "header value")
		if d.err != nil {
			return nil
		}
		if vs, ok := h[k]; ok {
			h[k] = append(vs, v)
			continue
		}
		vals[i] = v
		h[k] = vals[i : i+1 : i+1]
	}
	return h
}

// common is d.string, without a copy for the header names and values the
// API sends on most answers and requests.
func (d *decoder) common(limit int, what string) string {
	b := d.bytes(limit, what)
	// A switch on string(b) compares without converting.
	switch string(b) {
	case "Content-Type":
		return "Content-Type"
	case "X-Consul-Token":
		return "X-Consul-Token"
	case "Authorization":
		return "Authorization"
	case "X-Consul-Index":
		return "X-Consul-Index"
	case "X-Consul-Knownleader":
		return "X-Consul-Knownleader"
	case "X-Consul-Lastcontact":
		return "X-Consul-Lastcontact"
	case "X-Consul-Effective-Consistency":
		return "X-Consul-Effective-Consistency"
	case "X-Consul-Query-Backend":
		return "X-Consul-Query-Backend"
	case "application/json":
		return "application/json"
	case "application/json; charset=utf-8":
		return "application/json; charset=utf-8"
	case "text/plain; charset=utf-8":
		return "text/plain; charset=utf-8"
	case "blocking-query":
		return "blocking-query"
	case "leader":
		return "leader"
	case "consistent":
		return "consistent"
	case "stale":
		return "stale"
	case "true":
		return "true"
	case "false":
		return "false"
	case "0":
		return "0"
	}
	return string(b)
}

// method is the request's method, the usual ones without a copy.
func (d *decoder) method() string {
	b := d.bytes(maxMethodLen, "method")
	switch string(b) {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPost:
		return http.MethodPost
	case http.MethodDelete:
		return http.MethodDelete
	}
	return string(b)
}

// node is the origin node, *last when it is the same as the previous
// request's (then updated).
func (d *decoder) node(last *string) string {
	if last == nil {
		return d.string(maxNodeLen, "origin")
	}
	b := d.bytes(maxNodeLen, "origin")
	if string(b) != *last {
		*last = string(b)
	}
	return *last
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
	maxResponseFrame = maxResponseBody + maxFrameOverhead
)
