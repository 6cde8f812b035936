package rpc

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// TestServerAnswersAsHandleDoes: the server path encodes the answer's
// header as it writes it rather than copying it, so it is checked to send
// what handle sends: the header as it was at WriteHeader, a 500 for an
// answer that cannot be framed, a 400 for a method HTTP refuses.
func TestServerAnswersAsHandleDoes(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/late":
			w.Header().Set("X-Consul-Index", "7")
			hd := w.Header()
			w.WriteHeader(http.StatusAccepted)
			hd.Set("X-Consul-Index", "8") // after WriteHeader: not sent
			hd.Set("X-Late", "x")
			_, _ = w.Write([]byte("body"))
		case "/many":
			for i := range maxHeaders + 1 {
				w.Header().Add(fmt.Sprintf("X-H%d", i), "v")
			}
		case "/status":
			w.WriteHeader(42)
		}
	})
	_, addr := port(t, h)
	p := NewPool(PoolConfig{})
	defer p.Close()
	for _, c := range []struct {
		method, uri string
		status      int
		index, body string
	}{
		{"GET", "/late", http.StatusAccepted, "7", "body"},
		{"GET", "/many", http.StatusInternalServerError, "", "answer cannot be forwarded: bad rpc frame: 65 header values, over 64"},
		{"GET", "/status", http.StatusInternalServerError, "", "answer cannot be forwarded: bad rpc frame: status 42"},
		{"G(T", "/late", http.StatusBadRequest, "", `forwarded request: net/http: invalid method "G(T"`},
	} {
		req := &Request{Method: c.method, URI: c.uri}
		local := handle(context.Background(), h, req)
		for _, got := range []*Response{local, forward(t, p, addr, req)} {
			if got == local && c.status == http.StatusInternalServerError {
				continue // handle leaves framing to its caller
			}
			if got.Status != c.status || got.Header.Get("X-Consul-Index") != c.index ||
				got.Header.Get("X-Late") != "" || string(got.Body) != c.body {
				t.Errorf("%s %s: got %d %v %q, want %d index %q %q", c.method, c.uri, got.Status, got.Header,
					got.Body, c.status, c.index, c.body)
			}
		}
	}
}

func forward(t *testing.T, p *Pool, addr string, req *Request) *Response {
	t.Helper()
	resp, err := p.Forward(context.Background(), addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
