package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/server"
	"github.com/tenurekv/tenure/model"
)

// A client that goes away once its write is proposed (a half-closed
// connection cancels the request's context) does not change the write's
// outcome: it commits, and the handler reports success, as Consul does,
// rather than a 500 for a write that happened.
func TestWriteOutcomeIgnoresClientLeaving(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.NewServer(server.Config{NodeName: "dev", HTTPAddr: "127.0.0.1:8500", Dev: true,
		// The state machine sees only committed entries: cancelling here
		// is "after proposal" by construction.
		Apply: func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
			if cmd.KV != nil && cmd.KV.Key == "abandoned" {
				cancel()
			}
			return st, st.Apply(index, cmd)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-srv.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("dev server never registered itself")
	}
	h := httpapi.New(srv, httpapi.Options{})
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, http.MethodPut, "/v1/kv/abandoned", strings.NewReader("v"))
	h.ServeHTTP(rec, req)
	if ctx.Err() == nil {
		t.Fatal("the test's hook never cancelled the request")
	}
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "true" {
		t.Fatalf("committed write answered %d %q, want 200 true", rec.Code, rec.Body)
	}
	srv.Read(func(st *model.State) {
		if e, ok := st.Get("abandoned"); !ok || string(e.Value) != "v" {
			t.Fatalf("write not committed: %+v", e)
		}
	})
}
