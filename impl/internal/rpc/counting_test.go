package rpc

import (
	"net"
	"sync"
	"sync/atomic"
)

// countingConn counts the Write calls that reach a connection. Behind a
// bufio.Writer each is one flush (or one full buffer), so the count is the
// number of write syscalls a real socket would see.
type countingConn struct {
	net.Conn
	writes *atomic.Int64

	mu   sync.Mutex
	gate chan struct{} // when set, the next Write waits until it is closed
	held chan struct{} // closed when that Write is waiting
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	gate, held := c.gate, c.held
	c.gate, c.held = nil, nil
	c.mu.Unlock()
	if gate != nil {
		close(held)
		<-gate
	}
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// hold makes the next Write wait until gate is closed; held is closed once
// it waits.
func (c *countingConn) hold() (gate, held chan struct{}) {
	gate, held = make(chan struct{}), make(chan struct{})
	c.mu.Lock()
	c.gate, c.held = gate, held
	c.mu.Unlock()
	return gate, held
}

// countingListener wraps every accepted connection in a countingConn
// sharing one counter.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: l.writes}, nil
}
