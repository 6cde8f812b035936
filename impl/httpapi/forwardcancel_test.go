package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/httpapi"
)

// hangingTransport holds every request until its caller hangs up.
type hangingTransport struct{ started chan struct{} }

func (h hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	close(h.started)
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A follower forwarding a request whose caller hangs up (a killed Vault, an
// abandoned blocking read) logs no failure of the leader; a leader that
// cannot be reached still is logged.
func TestForwardCallerGoneIsNotAFailure(t *testing.T) {
	leader := newFixture(t)
	fb := leader.b.Follower("node-f")
	fb.SetLeader(false, leader.srv.URL, true)
	var logs strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: &logs}, Level: hclog.Warn})
	rt := hangingTransport{started: make(chan struct{})}
	h := httpapi.New(fb, httpapi.Options{Forward: rt, Logger: logger})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodPut, "/v1/kv/k", strings.NewReader("v")))
	}()
	<-rt.started
	cancel()
	<-done
	if strings.Contains(logs.String(), "forward to leader failed") {
		t.Fatalf("a hung-up caller was logged as a leader failure:\n%s", logs.String())
	}

	leader.srv.Close()
	h = httpapi.New(fb, httpapi.Options{Logger: logger})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/v1/kv/k", strings.NewReader("v")))
	if !strings.Contains(logs.String(), "forward to leader failed") {
		t.Fatalf("an unreachable leader was not logged:\n%s", logs.String())
	}
}
