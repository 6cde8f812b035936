package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"sync"
	"sync/atomic"
	"testing"
)

// errInjected is the write failure gatedConn is told to give.
var errInjected = errors.New("injected write failure")

// gatedConn is a pool connection the test breaks by hand: once failWrites
// is set its writes fail before sending a byte, and once it is closed its
// reader gets io.EOF, but only after readEnd is closed. io.EOF is how a
// reader sees its peer's close (a server restart); giving it for a local
// close as well keeps the test from resting on TCP reporting that one as
// net.ErrClosed, and readEnd lets the test decide when the pool's reader
// notices.
type gatedConn struct {
	net.Conn
	failWrites atomic.Bool
	closed     atomic.Bool
	readEnd    chan struct{}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && c.closed.Load() {
		<-c.readEnd
		return n, io.EOF
	}
	return n, err
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if c.failWrites.Load() {
		return 0, errInjected
	}
	return c.Conn.Write(b)
}

func (c *gatedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// TestForwardNeverResendsASentRequest: a request that reached its server
// is not sent again when its connection is closed under it. Here another
// caller sharing the connection finds it broken (its write fails) and
// drops it; only then does the pool's reader see the end of the stream.
// net/rpc ends the calls still waiting on a client closed locally with
// ErrShutdown when its codec reports a bare io.EOF, and Forward retries
// ErrShutdown on a fresh connection, so a codec doing that would run a
// write (a session create, a lock acquire) twice.
func TestForwardNeverResendsASentRequest(t *testing.T) {
	var runs atomic.Int32
	started := make(chan struct{})
	_, addr := port(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/session/create" {
			return // B's request, which counts for nothing here
		}
		if runs.Add(1) == 1 {
			close(started)
			<-r.Context().Done() // ends with its connection
		}
	}))

	var dials atomic.Int32
	first := make(chan *gatedConn, 1)
	readEnd := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(readEnd) }) }
	defer release() // never leave the pool's reader stuck
	p := NewPool(PoolConfig{Dial: func(ctx context.Context, a string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			return nil, err
		}
		gc := &gatedConn{Conn: c, readEnd: readEnd}
		if dials.Add(1) == 1 {
			first <- gc
		} else {
			gc.readEnd = make(chan struct{})
			close(gc.readEnd) // only the first connection is gated
		}
		return gc, nil
	}})
	defer p.Close()

	errA := make(chan error, 1)
	go func() {
		_, err := p.Forward(context.Background(), addr, &Request{Origin: Origin{Node: "c1"}, Method: "PUT",
			URI: "/v1/session/create", Body: []byte("{}")})
		errA <- err
	}()
	<-started // A was sent and is running on the server
	conn := <-first
	conn.failWrites.Store(true)

	// B takes A's connection (callers take the slots in turn), fails to
	// write and drops the connection, A's call still in flight on it.
	p.next.Add(connsPerServer - 1)
	_, errB := p.Forward(context.Background(), addr, &Request{Origin: Origin{Node: "c1"}, Method: "GET", URI: "/v1/kv/b"})
	if !errors.Is(errB, errInjected) {
		t.Errorf("B's forward gave %v, want the injected write failure", errB)
	}
	if !conn.closed.Load() {
		t.Fatal("B's failed write left the shared connection open")
	}
	// The client is closed: now its reader sees the end of the stream.
	release()

	err := <-errA
	if n := runs.Load(); n != 1 {
		t.Fatalf("the request ran %d times on the server, want once; A's forward gave %v", n, err)
	}
	if err == nil || errors.Is(err, rpc.ErrShutdown) {
		t.Fatalf("A's forward gave %v, want the broken connection's read error", err)
	}
}
