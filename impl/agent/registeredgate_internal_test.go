package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/httpapitest"
)

// pendingRegistration is a server whose own registration lands when the
// test closes registered.
type pendingRegistration struct{ registered chan struct{} }

func (p pendingRegistration) Registered() <-chan struct{} { return p.registered }
func (pendingRegistration) Clock() clock.Clock            { return clock.System{} }

// through sends method path through h and returns the answer and the
// virtual time it took.
func through(h http.Handler, method, path string) (*httptest.ResponseRecorder, time.Duration) {
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec, time.Since(start)
}

// TestRegisteredGateHoldsCreatesUntilRegistered (S47): on a server agent a
// session create waits for the server's own registration and goes on the
// moment it lands; other requests are never held, and creates after the
// registration are not either.
func TestRegisteredGateHoldsCreatesUntilRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := pendingRegistration{registered: make(chan struct{})}
		var served []string
		gate := registeredGate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served = append(served, r.URL.Path)
		}), reg, registerWait)

		if _, took := through(gate, http.MethodGet, "/v1/kv/k"); took != 0 {
			t.Errorf("a read waited %v before the registration, want no wait", took)
		}
		answered := make(chan time.Duration, 1)
		go func() {
			_, took := through(gate, http.MethodPut, "/v1/session/create")
			answered <- took
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if len(served) != 1 {
			t.Fatalf("served %v while the server was unregistered, want only the read", served)
		}
		close(reg.registered)
		if took := <-answered; took != 3*time.Second {
			t.Errorf("held create answered after %v, want the 3s until the registration", took)
		}
		if _, took := through(gate, http.MethodPut, "/v1/session/create"); took != 0 {
			t.Errorf("create after the registration waited %v, want no wait", took)
		}
		if len(served) != 3 {
			t.Errorf("served %v, want the read and both creates", served)
		}
	})
}

// TestRegisteredGateWithoutLeader (S47): a server that never sees its
// registration (no leader to make it) lets the create through at the
// gate's bound, and the create gets Consul's answer.
func TestRegisteredGateWithoutLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		follower := httpapitest.New("s1", clock.System{}).Follower("s2")
		gate := registeredGate(httpapi.New(follower, httpapi.Options{}),
			pendingRegistration{registered: make(chan struct{})}, registerWait)
		rec, took := through(gate, http.MethodPut, "/v1/session/create")
		if rec.Code != http.StatusInternalServerError || rec.Body.String() != "No cluster leader" {
			t.Errorf("create without a leader: %d %q, want 500 %q", rec.Code, rec.Body, "No cluster leader")
		}
		if took != 10*time.Second {
			t.Errorf("create without a leader answered after %v, want S65's bound, 10s", took)
		}
	})
}
