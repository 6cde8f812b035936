package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrameRoundTrip(t *testing.T) {
	req := &Request{Origin: Origin{Node: "agent-1", Forwarded: true}, Method: http.MethodPut,
		URI: "/v1/kv/a%2Fb?cas=3&flags=1", Header: http.Header{"X-Consul-Token": {"t"}, "Content-Type": {"a", "b"}},
		Body: []byte("value")}
	head, err := encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseRequest(append(head, req.Body...))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Fatalf("request changed (-sent +got):\n%s", diff)
	}
	resp := &Response{Status: 409, Header: http.Header{"X-Consul-Index": {"7"}}, Body: []byte("no")}
	head, err = encodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseResponse(append(head, resp.Body...))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resp, back); diff != "" {
		t.Fatalf("response changed (-sent +got):\n%s", diff)
	}
}

// TestFrameBounds: every bound refuses one byte over it, on both sides.
func TestFrameBounds(t *testing.T) {
	ok := func() *Request {
		return &Request{Origin: Origin{Node: "n"}, Method: "GET", URI: "/v1/kv/k", Header: http.Header{}}
	}
	cases := map[string]func(r *Request){
		"origin": func(r *Request) { r.Origin.Node = strings.Repeat("n", maxNodeLen+1) },
		"method": func(r *Request) { r.Method = strings.Repeat("M", maxMethodLen+1) },
		"uri":    func(r *Request) { r.URI = "/" + strings.Repeat("k", maxURILen) },
		"body":   func(r *Request) { r.Body = make([]byte, MaxRequestBody+1) },
		"header value": func(r *Request) {
			r.Header.Set("X-Consul-Token", strings.Repeat("t", maxHeaderValue+1))
		},
		"headers": func(r *Request) {
			for i := range maxHeaders + 1 {
				r.Header.Add("H", string(rune('a'+i%26)))
			}
		},
	}
	for name, spoil := range cases {
		r := ok()
		spoil(r)
		if _, err := encodeRequest(r); !errors.Is(err, errFrame) {
			t.Errorf("%s: encode gave %v, want errFrame", name, err)
		}
	}
	// The decoder refuses what an encoder without bounds would send.
	var b []byte
	b = append(b, frameVersion, 0)
	b = appendRaw(b, "n")
	b = appendRaw(b, "GET")
	b = appendRaw(b, "/"+strings.Repeat("k", maxURILen))
	b = append(b, 0, 0)
	if _, err := parseRequest(b); !errors.Is(err, errFrame) {
		t.Errorf("decode of an over-long URI gave %v, want errFrame", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), maxRequestFrame); !errors.Is(err, errFrame) {
		t.Errorf("a 4 GiB frame length gave %v, want errFrame", err)
	}
}

// appendRaw is putString without its bound.
func appendRaw(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// TestDecodeRejectsGarbage: truncations and trailing bytes of a good frame
// are errors, never panics.
func TestDecodeRejectsGarbage(t *testing.T) {
	req := &Request{Origin: Origin{Node: "n"}, Method: "PUT", URI: "/v1/txn", Body: []byte("[]")}
	head, _ := encodeRequest(req)
	full := append(head, req.Body...)
	for i := range len(full) {
		if _, err := parseRequest(full[:i]); err == nil {
			t.Errorf("truncated to %d bytes: decoded", i)
		}
	}
	if _, err := parseRequest(append(full, 'x')); err == nil {
		t.Error("trailing byte: decoded")
	}
	if _, err := parseResponse([]byte{frameVersion, 99, 0, 0}); err == nil {
		t.Error("status 99: decoded")
	}
}

func FuzzDecodeFrames(f *testing.F) {
	req := &Request{Origin: Origin{Node: "a", Forwarded: true}, Method: "PUT", URI: "/v1/kv/x?cas=1",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("v")}
	head, _ := encodeRequest(req)
	f.Add(append(head, req.Body...))
	resp := &Response{Status: 200, Header: http.Header{"X-Consul-Index": {"3"}}, Body: []byte("true")}
	head, _ = encodeResponse(resp)
	f.Add(append(head, resp.Body...))
	req.Origin.Token = "secret-id"
	head, _ = encodeRequest(req)
	f.Add(append(head, req.Body...))
	f.Add([]byte{})
	f.Add([]byte{frameVersion, 2})
	f.Add([]byte{frameVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, p []byte) {
		if r, err := parseRequest(p); err == nil {
			// What decodes encodes back to the same bytes' meaning.
			head, err := encodeRequest(r)
			if err != nil {
				t.Fatalf("decoded request does not encode: %v", err)
			}
			again, err := parseRequest(append(head, r.Body...))
			if err != nil || !cmp.Equal(r, again) {
				t.Fatalf("request does not survive a round trip: %v", err)
			}
		}
		if r, err := parseResponse(p); err == nil {
			head, err := encodeResponse(r)
			if err != nil {
				t.Fatalf("decoded response does not encode: %v", err)
			}
			if _, err := parseResponse(append(head, r.Body...)); err != nil {
				t.Fatalf("response does not survive a round trip: %v", err)
			}
		}
	})
}
