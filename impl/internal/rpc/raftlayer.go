package rpc

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftLayer is a raft.StreamLayer on the server port: it accepts the
// connections the Demux classifies as raft and dials peers announcing
// protoRaft.
type RaftLayer struct {
	addr  net.Addr
	dial  Dial
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

var _ raft.StreamLayer = (*RaftLayer)(nil)

func newRaftLayer(addr net.Addr, dial Dial) *RaftLayer {
	return &RaftLayer{addr: addr, dial: dial, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *RaftLayer) deliver(conn net.Conn) {
	select {
	case l.conns <- conn:
	case <-l.done:
		_ = conn.Close()
	}
}

// Accept implements net.Listener.
func (l *RaftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close implements net.Listener. raft closes its transport on shutdown;
// the port itself stays open until the Demux closes.
func (l *RaftLayer) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *RaftLayer) Addr() net.Addr { return l.addr }

// Dial implements raft.StreamLayer.
func (l *RaftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := l.dial(ctx, string(address))
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", address, err)
	}
	if _, err := conn.Write([]byte{protoRaft}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("raft dial %s: %w", address, err)
	}
	return conn, nil
}
