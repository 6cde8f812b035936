package agent

import (
	"net/http"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
)

// registerWait bounds how long a session create waits for this node's own
// registration (S65) before it is served anyway, as the client agent's
// hold does.
const registerWait = 10 * time.Second

// registration is what registeredGate waits on (a *server.Server): the
// moment the server saw its own node registered, on the server's clock.
type registration interface {
	Registered() <-chan struct{}
	Clock() clock.Clock
}

// registeredGate holds session creates until this server has seen its own
// node registered with a passing serfHealth (S47): an empty-body create binds
// to exactly that node and check, and would otherwise fail in the moments
// after start-up. Other requests pass straight through.
func registeredGate(next http.Handler, srv registration, limit time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/session/create" {
			select {
			case <-srv.Registered():
			default:
				done := make(chan struct{})
				t := srv.Clock().AfterFunc(limit, func() { close(done) })
				select {
				case <-srv.Registered():
				case <-done:
				case <-r.Context().Done():
				}
				t.Stop()
			}
		}
		next.ServeHTTP(w, r)
	})
}
