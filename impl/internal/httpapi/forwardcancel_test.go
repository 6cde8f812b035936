package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// hangingForwarder holds every request until its caller hangs up.
type hangingForwarder struct{ started chan struct{} }

func (h hangingForwarder) Forward(ctx context.Context, _ string, _ *rpc.Request) (*rpc.Response, error) {
	close(h.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A follower forwarding a request whose caller hangs up (a killed Vault, an
// abandoned blocking read) logs no failure of the leader; a leader that
// cannot be reached still is logged.
func TestForwardCallerGoneIsNotAFailure(t *testing.T) {
	leader := newFixture(t)
	fb := leader.b.Follower("node-f")
	fb.SetLeader(false, "leader:8300", true)
	var logs strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: &logs}, Level: hclog.Warn})
	rt := hangingForwarder{started: make(chan struct{})}
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

	// Nothing answers at leader:8300 here.
	h = httpapi.New(fb, httpapi.Options{Forward: rpc.Local{}, Logger: logger})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/v1/kv/k", strings.NewReader("v")))
	if !strings.Contains(logs.String(), "forward to leader failed") {
		t.Fatalf("an unreachable leader was not logged:\n%s", logs.String())
	}
}
