package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/httpapitest"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// holdAgentWait is the client agent's bound on holding a create (S47); the
// tests hold it to the same 10 s a server agent's registerWait has.
const holdAgentWait = 10 * time.Second

// healthReads counts the health reads a client agent made to learn whether
// it is registered.
func (c *countingForwarder) healthReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.paths {
		if strings.HasPrefix(p, http.MethodGet+" /v1/health/node/") {
			n++
		}
	}
	return n
}

// holdingClient is client agent node's HTTP API in front of one server
// backend, which it reaches through a countingForwarder.
func holdingClient(node string, srv *httpapitest.Backend) (http.Handler, *countingForwarder) {
	members := &staticMembers{}
	members.set("s1")
	fwd := &countingForwarder{to: rpc.Local{"s1": httpapi.New(srv, httpapi.Options{})}}
	return httpapi.NewClientAgent(httpapi.ClientOptions{Node: node, Members: members, Forward: fwd}), fwd
}

// createThrough makes an empty-body session create through h and returns
// the answer and the virtual time it took.
func createThrough(h http.Handler) (*httptest.ResponseRecorder, time.Duration) {
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/v1/session/create", nil))
	return rec, time.Since(start)
}

// requireHeld sends a create through h and fails unless it is still
// unanswered after d of virtual time; the answer comes on the channel once
// the hold ends. before says what the hold waits for.
func requireHeld(t *testing.T, h http.Handler, d time.Duration, before string) <-chan *httptest.ResponseRecorder {
	t.Helper()
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec, _ := createThrough(h)
		answered <- rec
	}()
	time.Sleep(d)
	synctest.Wait()
	select {
	case rec := <-answered:
		t.Fatalf("create answered before %s: %d %s", before, rec.Code, rec.Body)
	default:
	}
	return answered
}

// registerNode is the leader's gossip reconcile registering node with a
// passing serfHealth (S53).
func registerNode(t *testing.T, s *httpapitest.Store, node string) {
	t.Helper()
	if _, err := s.Apply(model.Command{Register: &model.Register{Node: node, Address: "127.0.0.2",
		Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: "Serf Health Status", Status: model.HealthPassing}}}}); err != nil {
		t.Fatalf("register %s: %v", node, err)
	}
}

// TestClientAgentHoldsFirstCreateUntilRegistered (S47): a create through a
// client agent whose node the leader has not registered yet is held, not
// refused; it goes through once the registration lands and makes a session
// on the agent's node bound to its serfHealth. A create after that is not
// held and asks the servers nothing more.
func TestClientAgentHoldsFirstCreateUntilRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := httpapitest.New("s1", clock.System{})
		client, fwd := holdingClient("c1", srv)

		// The leader has not reconciled the agent's join yet.
		answered := requireHeld(t, client, 3*time.Second, "the agent's node was registered")
		if n := srv.Store().Applies(); n != 1 { // s1's own registration
			t.Fatalf("%d commands applied while the create was held, want only s1's registration", n)
		}

		registered := time.Now()
		registerNode(t, srv.Store(), "c1")
		rec := <-answered
		if waited := time.Since(registered); waited > 100*time.Millisecond {
			t.Errorf("create answered %v after the registration, want within one 100ms poll", waited)
		}
		s := createdSession(t, srv.Store(), rec)
		if s.Node != "c1" || len(s.NodeChecks) != 1 || s.NodeChecks[0] != model.SerfHealthCheckID {
			t.Errorf("held create made %+v, want node c1 bound to serfHealth", s)
		}

		reads := fwd.healthReads()
		rec, took := createThrough(client)
		createdSession(t, srv.Store(), rec)
		if took != 0 || fwd.healthReads() != reads {
			t.Errorf("create after registration took %v and %d health reads, want no hold", took, fwd.healthReads()-reads)
		}
	})
}

// TestClientAgentHoldsWhileNoServerIsKnown (S47): an agent that has not
// yet learned of a server by gossip holds a create too, and sends it once a
// server is known and has registered the agent's node.
func TestClientAgentHoldsWhileNoServerIsKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := httpapitest.New("s1", clock.System{})
		registerNode(t, srv.Store(), "c1")
		members := &staticMembers{}
		client := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: members,
			Forward: rpc.Local{"s1": httpapi.New(srv, httpapi.Options{})}})
		answered := requireHeld(t, client, 2*time.Second, "any server was known")
		members.set("s1")
		if s := createdSession(t, srv.Store(), <-answered); s.Node != "c1" {
			t.Errorf("held create made a session on %q, want c1", s.Node)
		}
	})
}

// TestClientAgentCreateWithoutLeader (S47): with no leader the hold ends at
// its bound, and the create gets Consul's answer for a cluster without one.
func TestClientAgentCreateWithoutLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := httpapitest.New("s1", clock.System{})
		registerNode(t, srv.Store(), "c1")
		follower := srv.Follower("s2")
		client, _ := holdingClient("c1", follower)
		rec, took := createThrough(client)
		if rec.Code != http.StatusInternalServerError || rec.Body.String() != "No cluster leader" {
			t.Errorf("create without a leader: %d %q, want 500 %q", rec.Code, rec.Body, "No cluster leader")
		}
		if took < holdAgentWait-100*time.Millisecond || took > holdAgentWait+100*time.Millisecond {
			t.Errorf("create without a leader answered after %v, want the hold's bound %v", took, holdAgentWait)
		}
	})
}

// createdSession is the session a create answered with, as the servers
// store it.
func createdSession(t *testing.T, s *httpapitest.Store, rec *httptest.ResponseRecorder) model.Session {
	t.Helper()
	var out struct{ ID string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	sess, ok := s.Snapshot().Session(out.ID)
	if !ok {
		t.Fatalf("session %s not stored", out.ID)
	}
	return sess
}
