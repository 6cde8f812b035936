// Package pipenet is a net.Listener whose connections are in-memory pipes
// (net.Pipe), for tests that run servers inside a testing/synctest bubble,
// where real sockets would stall the fake clock.
package pipenet

import (
	"context"
	"net"
	"sync"
)

// Listener hands out the server ends of the pipes Dial makes. Its address
// is a fixed loopback TCP address, which servers may advertise.
type Listener struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

// Listen returns a listener that reports port on 127.0.0.1 as its address.
func Listen(port int) *Listener {
	return &Listener{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
		conns: make(chan net.Conn, 128), done: make(chan struct{})}
}

// Dial opens a pipe to the listener; the address is ignored. It fails once
// the listener is closed.
func (l *Listener) Dial(context.Context, string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *Listener) Addr() net.Addr { return l.addr }

// Waiting is how many dialled connections are not accepted yet.
func (l *Listener) Waiting() int { return len(l.conns) }
