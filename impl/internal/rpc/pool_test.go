package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// port is a server port on loopback whose forwarded requests run h.
func port(t testing.TB, h http.Handler) (*Demux, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(nil)
	srv.SetHandler(h)
	d := NewDemux(ln, srv, DialTCP, nil, nil)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close demux: %v", err)
		}
	})
	return d, ln.Addr().String()
}

// echo answers with the origin, method, URI, token and body it saw.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	o, ok := OriginFrom(r.Context())
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Consul-Index", "42")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, strings.Join([]string{o.Node, boolText(o.Forwarded), boolText(ok), r.Method,
		r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Consul-Token"), string(body)}, "|"))
})

func boolText(b bool) string {
	if b {
		return "t"
	}
	return "f"
}

func TestPoolForwards(t *testing.T) {
	_, addr := port(t, echo)
	p := NewPool(PoolConfig{})
	defer p.Close()
	for i := range 3 { // later requests reuse the connection
		resp, err := p.Forward(context.Background(), addr, &Request{Origin: Origin{Node: "c1", Forwarded: i == 1},
			Method: "PUT", URI: "/v1/kv/a%2Fb?cas=0", Header: http.Header{"X-Consul-Token": {"secret"}},
			Body: []byte("v")})
		if err != nil {
			t.Fatal(err)
		}
		want := "c1|" + boolText(i == 1) + "|t|PUT|/v1/kv/a/b|cas=0|secret|v"
		if resp.Status != http.StatusCreated || string(resp.Body) != want || resp.Header.Get("X-Consul-Index") != "42" {
			t.Fatalf("got %d %q %v, want 201 %q", resp.Status, resp.Body, resp.Header, want)
		}
	}
	if len(p.servers) != 1 {
		t.Fatalf("%d servers known for one", len(p.servers))
	}
}

// TestCancelReachesServer: the caller giving up ends the request's context
// on the serving side, and Forward returns the caller's error.
func TestCancelReachesServer(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	_, addr := port(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	p := NewPool(PoolConfig{})
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Forward(ctx, addr, &Request{Method: "GET", URI: "/v1/kv/k?index=5"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Forward gave %v, want context.Canceled", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context ended with %v", err)
	}
}

// TestConnReplacedAfterServerRestart: a pool whose connection died dials a
// new one.
func TestConnReplacedAfterServerRestart(t *testing.T) {
	d, addr := port(t, echo)
	p := NewPool(PoolConfig{})
	defer p.Close()
	req := &Request{Origin: Origin{Node: "n"}, Method: "GET", URI: "/x"}
	if _, err := p.Forward(context.Background(), addr, req); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s not free again: %v", addr, err)
	}
	srv := NewServer(nil)
	srv.SetHandler(echo)
	d2 := NewDemux(ln, srv, nil, nil, nil)
	defer d2.Close()
	// The old connection may not have noticed yet: the first Forward can
	// fail, after which one is dialled afresh.
	var last error
	for range 3 {
		if _, last = p.Forward(context.Background(), addr, req); last == nil {
			return
		}
	}
	t.Fatalf("no forward after the restart: %v", last)
}

// TestDemuxRoutes: raft connections reach the raft layer, unknown bytes and
// silent connections are closed.
func TestDemuxRoutes(t *testing.T) {
	d, addr := port(t, echo)
	got := make(chan string, 1)
	go func() {
		c, err := d.RaftLayer().Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		b := make([]byte, 4)
		_, _ = io.ReadFull(c, b)
		got <- string(b)
		c.Close()
	}()
	c, err := d.RaftLayer().Dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("raft"))
	if g := <-got; g != "raft" {
		t.Fatalf("raft layer got %q", g)
	}
	c.Close()
	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, _ = bad.Write([]byte{9})
	_ = bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("unknown protocol byte: read gave %v, want the connection closed", err)
	}
}

// TestHandleParsesLikeAServer: a forwarded URI means what it meant in the
// request line the client sent.
func TestHandleParsesLikeAServer(t *testing.T) {
	var got *http.Request
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r })
	for uri, path := range map[string]string{"//v1/kv/x": "//v1/kv/x", "/v1/kv/a%2Fb?recurse": "/v1/kv/a/b"} {
		resp := handle(context.Background(), h, &Request{Method: "GET", URI: uri})
		if resp.Status != http.StatusOK || got.URL.Path != path || got.URL.Host != "" || got.RequestURI != uri {
			t.Errorf("%s: status %d, path %q host %q", uri, resp.Status, got.URL.Path, got.URL.Host)
		}
	}
	if resp := handle(context.Background(), h, &Request{Method: "GET", URI: "no-slash"}); resp.Status != http.StatusBadRequest {
		t.Errorf("a relative URI answered %d", resp.Status)
	}
}

// TestPoolSharesConnections: concurrent callers to one server share the
// pool's connsPerServer connections.
func TestPoolSharesConnections(t *testing.T) {
	var conns atomic.Int32
	_, addr := port(t, echo)
	p := NewPool(PoolConfig{Dial: func(ctx context.Context, a string) (net.Conn, error) {
		conns.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", a)
	}})
	defer p.Close()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			resp, err := p.Forward(context.Background(), addr, &Request{Origin: Origin{Node: "n"}, Method: "PUT",
				URI: "/v1/kv/k", Body: []byte{byte('a' + i)}})
			if err != nil || resp.Status != http.StatusCreated || !strings.HasSuffix(string(resp.Body), "|"+string(rune('a'+i))) {
				t.Errorf("request %d: %+v %v", i, resp, err)
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n != connsPerServer {
		t.Fatalf("%d connections dialled for one server, want %d", n, connsPerServer)
	}
}
