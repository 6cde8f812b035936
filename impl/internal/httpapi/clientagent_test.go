package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// staticMembers is a gossip pool that lists fixed servers.
type staticMembers struct {
	mu      sync.Mutex
	servers []string
}

func (m *staticMembers) List() []gossip.Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gossip.Member
	for _, addr := range m.servers {
		out = append(out, gossip.Member{Member: reconcile.Member{Name: addr, Address: addr + ".http", Server: true,
			RaftAddr: addr}, SerfStatus: 1})
	}
	return out
}

func (m *staticMembers) set(servers ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = servers
}

func (m *staticMembers) Local() gossip.Member          { return gossip.Member{} }
func (m *staticMembers) Join([]string) (int, error)    { return 0, nil }
func (m *staticMembers) Leave() error                  { return nil }
func (m *staticMembers) ForceLeave(string, bool) error { return nil }
func (m *staticMembers) Stats() map[string]string      { return nil }

// recordingForwarder answers every request itself, records which server it
// was sent to, and fails those marked down.
type recordingForwarder struct {
	mu   sync.Mutex
	hits []string
	down map[string]bool
}

func (rt *recordingForwarder) Forward(ctx context.Context, addr string, req *rpc.Request) (*rpc.Response, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.hits = append(rt.hits, addr)
	if rt.down[addr] {
		return nil, errors.New("connection refused")
	}
	if strings.HasPrefix(req.URI, "/v1/kv/block") {
		// A blocking read that lasts until its caller hangs up.
		rt.mu.Unlock()
		<-ctx.Done()
		rt.mu.Lock()
		return nil, ctx.Err()
	}
	return &rpc.Response{Status: http.StatusOK, Body: []byte("{}")}, nil
}

func (rt *recordingForwarder) served(n int) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.hits[len(rt.hits)-n:]...)
}

// A client agent keeps to one server, as Consul's does, so that its stale
// reads cannot step back to a server that has applied less of the log; it
// moves on when that server fails or leaves the gossip pool.
func TestClientAgentKeepsItsServer(t *testing.T) {
	members := &staticMembers{}
	members.set("10.0.0.1:8300", "10.0.0.2:8300", "10.0.0.3:8300")
	rt := &recordingForwarder{down: map[string]bool{}}
	var logs strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: &logs}, Level: hclog.Warn})
	agent := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: members, Forward: rt, Logger: logger})

	get := func() int {
		w := httptest.NewRecorder()
		agent.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/catalog/services?stale", nil))
		return w.Code
	}
	sameServer := func(what string, n int) string {
		t.Helper()
		for range n {
			if code := get(); code != http.StatusOK {
				t.Fatalf("%s: status %d", what, code)
			}
		}
		hits := rt.served(n)
		for _, h := range hits {
			if h != hits[0] {
				t.Fatalf("%s: requests went to %v, want one server", what, hits)
			}
		}
		return hits[0]
	}

	first := sameServer("steady", 10)

	// The server fails: that request gets Consul's 500, the next ones go
	// to one other server and stay there.
	rt.down[first] = true
	if code := get(); code != http.StatusInternalServerError {
		t.Fatalf("request to a failed server: status %d, want 500", code)
	}
	second := sameServer("after a failure", 10)
	if second == first {
		t.Fatalf("still sent to the failed server %s", first)
	}

	// The server leaves gossip: the agent moves to one that is listed.
	var rest []string
	for _, s := range []string{"10.0.0.1:8300", "10.0.0.2:8300", "10.0.0.3:8300"} {
		if s != second {
			rest = append(rest, s)
		}
	}
	members.set(rest...)
	delete(rt.down, first)
	third := sameServer("after a leave", 10)
	if third == second {
		t.Fatalf("still sent to %s, which left", second)
	}

	// A caller that hangs up mid-request says nothing of the server: the
	// agent keeps it and logs no failure.
	failures := strings.Count(logs.String(), "request to server failed")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		agent.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/kv/block?index=9", nil))
	}()
	cancel()
	<-done
	if after := sameServer("after a caller hung up", 5); after != third {
		t.Fatalf("moved from %s to %s when a caller hung up", third, after)
	}
	if strings.Count(logs.String(), "request to server failed") != failures {
		t.Fatalf("a hung-up caller was logged as a server failure:\n%s", logs.String())
	}
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// lastForwarder keeps the last request it was given and answers 200.
type lastForwarder struct {
	mu   sync.Mutex
	last *rpc.Request
}

func (l *lastForwarder) Forward(_ context.Context, _ string, req *rpc.Request) (*rpc.Response, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = req
	return &rpc.Response{Status: http.StatusOK, Body: []byte("true")}, nil
}

// TestClientAgentNamesItsOwnNode: whatever headers a client sends, a client
// agent forwards as its own node, not as a server's forward (so the server
// may still forward once to its leader), and the headers that once carried
// an origin stay behind; the token does travel.
func TestClientAgentNamesItsOwnNode(t *testing.T) {
	members := &staticMembers{}
	members.set("10.0.0.1:8300")
	fwd := &lastForwarder{}
	agent := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: members, Forward: fwd})
	r := httptest.NewRequest(http.MethodPut, "/v1/kv/a%2Fb?cas=0", strings.NewReader("v"))
	r.Header.Set("X-Tenure-Agent", "other-node")
	r.Header.Set("X-Tenure-Forwarded-By", "other-node")
	r.Header.Set("X-Consul-Token", "tok")
	w := httptest.NewRecorder()
	agent.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	got := fwd.last
	if got == nil || got.Origin != (rpc.Origin{Node: "c1", Token: "tok"}) {
		t.Fatalf("forwarded %+v, want origin c1 not forwarded, with the caller's token", got)
	}
	if got.URI != "/v1/kv/a%2Fb?cas=0" || string(got.Body) != "v" || got.Header.Get("X-Consul-Token") != "tok" {
		t.Fatalf("forwarded request changed: %+v", got)
	}
	for k := range got.Header {
		if strings.HasPrefix(k, "X-Tenure-") {
			t.Fatalf("header %s was forwarded: %v", k, got.Header)
		}
	}
}

// answerForwarder answers every forwarded request with one fixed answer.
type answerForwarder struct{ resp rpc.Response }

func (a answerForwarder) Forward(context.Context, string, *rpc.Request) (*rpc.Response, error) {
	r := a.resp
	return &r, nil
}

// TestClientAgentLogsForwardedErrors: a request a server refused is logged
// on the client agent as it would be had the agent answered it, token
// hidden; an answer without text (a missing key's 404) is not an error.
func TestClientAgentLogsForwardedErrors(t *testing.T) {
	members := &staticMembers{}
	members.set("10.0.0.1:8300")
	for _, tc := range []struct {
		resp   rpc.Response
		logged string
	}{
		{rpc.Response{Status: http.StatusNotFound, Body: []byte("Session id 'x' not found")},
			`[ERROR] Request error: method=GET url=/v1/session/info/x?token=<hidden> from=192.0.2.1:1234 error="Session id 'x' not found"`},
		{rpc.Response{Status: http.StatusNotFound}, ""},
		{rpc.Response{Status: http.StatusOK, Body: []byte("[]")}, ""},
	} {
		var logs strings.Builder
		logger := hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: &logs}, Level: hclog.Warn})
		agent := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: members, Forward: answerForwarder{tc.resp}, Logger: logger})
		w := httptest.NewRecorder()
		agent.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/session/info/x?token=s3cret", nil))
		got := logs.String()
		switch {
		case tc.logged == "" && got != "":
			t.Errorf("%d %q: logged %q", tc.resp.Status, tc.resp.Body, got)
		case tc.logged != "" && !strings.Contains(got, tc.logged):
			t.Errorf("%d %q: logged %q, want %q", tc.resp.Status, tc.resp.Body, got, tc.logged)
		case strings.Contains(got, "s3cret"):
			t.Errorf("the token reached the log: %q", got)
		}
	}
}
