package rpc

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestFrameToken: a token travels as sent; a request without one is framed
// exactly as before tokens travelled (flags 0 or 1), so older servers still
// parse it; a frame that flags a token but carries an empty one, or a flag
// no one knows, is refused.
func TestFrameToken(t *testing.T) {
	req := &Request{Origin: Origin{Node: "n", Forwarded: true, Token: "5ef0c2de-1a2b-4c3d-8e9f-0123456789ab"}, Method: "GET", URI: "/v1/kv/k"}
	head, err := encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseRequest(head)
	if err != nil || got.Origin != req.Origin {
		t.Fatalf("token frame: %+v %v", got, err)
	}
	req.Origin.Token = ""
	head, err = encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if head[1] != flagForwarded {
		t.Fatalf("a request without a token has flags %#x, want %#x", head[1], flagForwarded)
	}
	// Flags say a token follows, and it is empty.
	bad := append([]byte{frameVersion, flagToken}, 1, 'n', 0, 3, 'G', 'E', 'T', 2, '/', 'k', 0, 0)
	if _, err := parseRequest(bad); !errors.Is(err, errFrame) {
		t.Fatalf("an empty flagged token: %v", err)
	}
	bad[1] = 1 << 3
	if _, err := parseRequest(bad); !errors.Is(err, errFrame) {
		t.Fatalf("an unknown flag: %v", err)
	}
	req.Origin.Token = string(make([]byte, maxTokenLen+1))
	if _, err := encodeRequest(req); !errors.Is(err, errFrame) {
		t.Fatalf("an over-long token: %v", err)
	}
}

// TestRequestToken is Consul's order of token sources.
func TestRequestToken(t *testing.T) {
	for _, tc := range []struct {
		target, xToken, auth, want string
	}{
		{"/v1/kv/k", "", "", ""},
		{"/v1/kv/k?token=q", "h", "Bearer b", "q"},
		{"/v1/kv/k?token=", "h", "Bearer b", "h"},
		{"/v1/kv/k?tokens=x", "", "Bearer b", "b"},
		{"/v1/kv/k", "", "BEARER  b c", "b"},
		{"/v1/kv/k", "", "Bearer", ""},
		{"/v1/kv/k", "", "Basic b", ""},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.target, nil)
		if tc.xToken != "" {
			r.Header.Set("X-Consul-Token", tc.xToken)
		}
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		if got := RequestToken(r); got != tc.want {
			t.Errorf("%s X-Consul-Token=%q Authorization=%q: %q, want %q", tc.target, tc.xToken, tc.auth, got, tc.want)
		}
	}
}
