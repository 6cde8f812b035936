package rpc

import (
	"errors"
	"strings"
	"testing"
)

// TestFrameSourceIP: a source address travels as sent, after the token or
// in its place; a request without one is framed as before (so a server
// that predates it parses every other request); a frame that flags an
// empty one, or an over-long one, is refused.
func TestFrameSourceIP(t *testing.T) {
	for _, token := range []string{"", "5ef0c2de-1a2b-4c3d-8e9f-0123456789ab"} {
		req := &Request{Origin: Origin{Node: "n", Forwarded: true, Token: token, SourceIP: "2001:db8::17"},
			Method: "GET", URI: "/v1/query/q/execute"}
		head, err := encodeRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseRequest(head)
		if err != nil || got.Origin != req.Origin {
			t.Fatalf("source address frame with token %q: %+v %v", token, got, err)
		}
	}
	req := &Request{Origin: Origin{Node: "n"}, Method: "GET", URI: "/v1/kv/k"}
	head, err := encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if head[1] != 0 {
		t.Fatalf("a request without a source address has flags %#x, want 0", head[1])
	}
	bad := append([]byte{frameVersion, flagSourceIP}, 1, 'n', 0, 3, 'G', 'E', 'T', 2, '/', 'k', 0, 0)
	if _, err := parseRequest(bad); !errors.Is(err, errFrame) {
		t.Fatalf("an empty flagged source address: %v", err)
	}
	req.Origin.SourceIP = strings.Repeat("1", maxSourceIPLen+1)
	if _, err := encodeRequest(req); !errors.Is(err, errFrame) {
		t.Fatalf("an over-long source address: %v", err)
	}
}
