package rpc

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pipeServer is a Pool whose connections are pipes to one Server, with the
// writes of both ends counted and the serving codecs at hand.
type pipeServer struct {
	pool       *Pool
	srvWrites  atomic.Int64
	cliWrites  atomic.Int64
	mu         sync.Mutex
	srvConns   []*countingConn
	cliConns   []*countingConn
	serverConn []*serverConn
}

func newPipeServer(t *testing.T, h http.Handler) *pipeServer {
	srv := NewServer(nil)
	srv.SetHandler(h)
	ps := &pipeServer{}
	ps.pool = NewPool(PoolConfig{Dial: func(ctx context.Context, _ string) (net.Conn, error) {
		cli, end := net.Pipe()
		sc := &countingConn{Conn: end, writes: &ps.srvWrites}
		cc := &countingConn{Conn: cli, writes: &ps.cliWrites}
		codec := newServerConn(srv, sc)
		ps.mu.Lock()
		ps.srvConns, ps.cliConns = append(ps.srvConns, sc), append(ps.cliConns, cc)
		ps.serverConn = append(ps.serverConn, codec)
		ps.mu.Unlock()
		go func() {
			if _, err := end.Read(make([]byte, 1)); err != nil { // the protocol byte
				return
			}
			srv.rpc.ServeCodec(codec)
		}()
		return cc, nil
	}})
	t.Cleanup(func() {
		_ = ps.pool.Close()
		_ = srv.Close()
	})
	return ps
}

// warm forwards one request on each of the pool's connections, one after
// another: with no other traffic, each must be flushed by its own writer
// or it would never be answered.
func (ps *pipeServer) warm(t *testing.T) {
	ps.mu.Lock()
	dialled := len(ps.cliConns)
	ps.mu.Unlock()
	for range connsPerServer {
		if _, err := ps.pool.Forward(context.Background(), "leader", &Request{Method: "GET", URI: "/now"}); err != nil {
			t.Fatal(err)
		}
	}
	// Each request and each answer reached its socket in one write (a
	// dial adds the protocol byte).
	ps.mu.Lock()
	dials := int64(len(ps.cliConns) - dialled)
	ps.mu.Unlock()
	if s, c := ps.srvWrites.Load(), ps.cliWrites.Load(); s != connsPerServer || c != connsPerServer+dials {
		t.Fatalf("lone requests: %d server writes, %d client writes; want %d and %d", s, c, connsPerServer, connsPerServer+dials)
	}
	ps.srvWrites.Store(0)
	ps.cliWrites.Store(0)
}

// until waits for cond, which holds once the goroutines it waits for have
// run; one that never holds fails the test instead of hanging it.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
	}
}

// TestLoneRequestIsFlushed: a request alone on a connection, and its answer,
// are written at once; nothing else is ever sent that would push them out.
func TestLoneRequestIsFlushed(t *testing.T) {
	ps := newPipeServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ps.warm(t)
	ps.warm(t) // and again on connections already used
}

// coalesce holds the next write on each of conns, sends one request per
// connection (its write, or its answer's, is then held), then perConn-1
// more per connection, and lets the writes go once those are waiting to be
// written (ready). It fails unless the writes counted meanwhile are 2 per
// connection: the held one, then the waiting ones together. what names
// the frames; arrived and release, if set, say when the extra calls
// reached the handler and let them go.
func (ps *pipeServer) coalesce(t *testing.T, what string, conns []*countingConn, writes *atomic.Int64, ready func() []*atomic.Int32,
	uri string, arrived func() int, release func()) {
	t.Helper()
	var gates, helds []chan struct{}
	for _, c := range conns {
		gate, held := c.hold()
		gates, helds = append(gates, gate), append(helds, held)
	}
	var wg sync.WaitGroup
	send := func(uri string) {
		wg.Go(func() {
			if _, err := ps.pool.Forward(context.Background(), "leader", &Request{Method: "GET", URI: uri}); err != nil {
				t.Error(err)
			}
		})
	}
	// The pool takes its connections in turn: any connsPerServer calls in
	// a row use each once.
	for range connsPerServer {
		send("/now")
	}
	for _, held := range helds {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("a connection's first write never reached its socket")
		}
	}
	for range (perConn - 1) * connsPerServer {
		send(uri)
	}
	if arrived != nil {
		until(t, "the extra calls at the handler", func() bool { return arrived() == (perConn-1)*connsPerServer })
		release()
	}
	for _, r := range ready() {
		until(t, "the extra calls waiting to be written", func() bool { return r.Load() == perConn-1 })
	}
	for _, g := range gates {
		close(g)
	}
	wg.Wait()
	if got, want := writes.Load(), int64(2*connsPerServer); got != want {
		t.Fatalf("%d %s took %d writes, want %d (one held, then the rest together, per connection)",
			perConn*connsPerServer, what, got, want)
	}
}

const perConn = 4 // requests per connection in the tests below

// TestAnswersCoalesce: answers that are ready together on one connection
// are written with one flush. While each connection's first answer is held
// at its socket, three more become ready behind it; they go out in one
// write.
func TestAnswersCoalesce(t *testing.T) {
	var arrived atomic.Int32
	wait := make(chan struct{})
	ps := newPipeServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			arrived.Add(1)
			<-wait
		}
	}))
	ps.warm(t)
	ready := func() (rs []*atomic.Int32) {
		for _, sc := range ps.serverConn {
			rs = append(rs, &sc.ready)
		}
		return rs
	}
	ps.coalesce(t, "answers", ps.srvConns, &ps.srvWrites, ready, "/wait",
		func() int { return int(arrived.Load()) }, func() { close(wait) })
}

// TestRequestsCoalesce: requests sent together on one connection go out
// with one flush, as answers do.
func TestRequestsCoalesce(t *testing.T) {
	ps := newPipeServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ps.warm(t)
	ready := func() (rs []*atomic.Int32) {
		for _, slot := range ps.pool.servers["leader"].conns {
			rs = append(rs, &slot.conn.codec.ready)
		}
		return rs
	}
	ps.coalesce(t, "requests", ps.cliConns, &ps.cliWrites, ready, "/now", nil, nil)
}
