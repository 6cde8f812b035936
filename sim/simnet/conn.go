package simnet

import (
	"bytes"
	"cmp"
	"io"
	"net"
	"os"
	"slices"
	"time"
)

// Addr is a simulated network address ("n1:8500").
type Addr string

// Network implements net.Addr.
func (Addr) Network() string { return "sim" }

func (a Addr) String() string { return string(a) }

// connPair is one connection: the dialer's end and the listener's end.
type connPair struct {
	id             uint64 // creation order, for deterministic iteration
	client, server *conn
}

// conn is one end of an in-memory connection whose bytes travel through the
// network. Writes never block (unbounded send buffer); reads block on bubble
// channels, so goroutines using it stay durably blocked under synctest.
type conn struct {
	n              *Network
	pair           *connPair
	peer           *conn
	node, peerNode string
	laddr, raddr   Addr
	out            *stream // FIFO state of the bytes this end sends

	// Guarded by n.mu.
	buf      []byte
	eof      bool          // the peer's FIN arrived
	closed   bool          // Close was called on this end
	err      error         // the connection broke
	wake     chan struct{} // closed and replaced on any change a reader waits for
	closedCh chan struct{}
	rd, wd   deadline
}

var _ net.Conn = (*conn)(nil)

func (n *Network) newPairLocked(from, to string, laddr, raddr Addr) *connPair {
	c := &conn{n: n, node: from, peerNode: to, laddr: laddr, raddr: raddr, out: &stream{},
		wake: make(chan struct{}), closedCh: make(chan struct{}), rd: newDeadline(), wd: newDeadline()}
	s := &conn{n: n, node: to, peerNode: from, laddr: raddr, raddr: laddr, out: &stream{},
		wake: make(chan struct{}), closedCh: make(chan struct{}), rd: newDeadline(), wd: newDeadline()}
	c.peer, s.peer = s, c
	n.nextPair++
	p := &connPair{id: n.nextPair, client: c, server: s}
	c.pair, s.pair = p, p
	n.pairs[p] = struct{}{}
	return p
}

func (c *conn) signalLocked() {
	close(c.wake)
	c.wake = make(chan struct{})
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "sim", Source: c.laddr, Addr: c.raddr, Err: err}
}

// Read implements net.Conn.
func (c *conn) Read(b []byte) (int, error) {
	n := c.n
	n.mu.Lock()
	for {
		switch {
		case c.closed:
			n.mu.Unlock()
			return 0, c.opErr("read", net.ErrClosed)
		case c.rd.expired():
			n.mu.Unlock()
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		case len(c.buf) > 0:
			k := copy(b, c.buf)
			c.buf = c.buf[k:]
			n.mu.Unlock()
			return k, nil
		case c.err != nil:
			n.mu.Unlock()
			return 0, c.opErr("read", c.err)
		case c.eof:
			n.mu.Unlock()
			return 0, io.EOF
		case len(b) == 0:
			n.mu.Unlock()
			return 0, nil
		}
		wake, dl := c.wake, c.rd.ch
		n.mu.Unlock()
		select {
		case <-wake:
		case <-dl:
		case <-c.closedCh:
		}
		n.mu.Lock()
	}
}

// Write implements net.Conn. The bytes are copied and sent as one chunk.
func (c *conn) Write(b []byte) (int, error) {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case c.closed:
		return 0, c.opErr("write", net.ErrClosed)
	case c.wd.expired():
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	case c.err != nil:
		return 0, c.opErr("write", c.err)
	case len(b) == 0:
		return 0, nil
	}
	data := bytes.Clone(b)
	peer := c.peer
	n.routeLocked(&envelope{
		from: c.node, to: c.peerNode, stream: c.out, msg: streamMsg{"data", len(data)},
		deliver: func() { peer.receiveLocked(data) },
		lost:    func(why string) { n.breakPairLocked(c.pair, why) },
	})
	return len(b), nil
}

func (c *conn) receiveLocked(data []byte) {
	if c.closed || c.err != nil {
		return
	}
	c.buf = append(c.buf, data...)
	c.signalLocked()
}

// Close implements net.Conn: the peer reads EOF once the bytes already sent
// have arrived.
func (c *conn) Close() error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if c.closed {
		return c.opErr("close", net.ErrClosed)
	}
	c.closeLocked()
	return nil
}

func (c *conn) closeLocked() {
	if c.closed {
		return
	}
	n := c.n
	c.closed = true
	c.buf = nil
	close(c.closedCh)
	c.rd.stopLocked()
	c.wd.stopLocked()
	if c.err == nil {
		peer := c.peer
		n.routeLocked(&envelope{
			from: c.node, to: c.peerNode, stream: c.out, msg: streamMsg{"FIN", 0},
			deliver: func() {
				peer.eof = true
				peer.signalLocked()
			},
		})
	}
	if c.peer.closed || c.peer.err != nil {
		delete(n.pairs, c.pair)
	}
}

// breakLocked fails both ends of a connection, discarding unread bytes.
func (n *Network) breakPairLocked(p *connPair, why string) {
	if _, ok := n.pairs[p]; !ok {
		return
	}
	delete(n.pairs, p)
	for _, c := range []*conn{p.client, p.server} {
		if !c.closed && c.err == nil {
			c.err = ErrConnBroken
			c.buf = nil
			c.signalLocked()
		}
	}
	n.ctlLocked(Conn, p.client.node, p.server.node, "break "+string(p.client.laddr)+"->"+string(p.client.raddr), why)
}

// breakCutPairsLocked breaks every connection that a cut now separates.
func (n *Network) breakCutPairsLocked() {
	for _, p := range n.sortedPairsLocked() {
		a, b := p.client.node, p.server.node
		if n.cutLocked(a, b) || n.cutLocked(b, a) {
			n.breakPairLocked(p, "partition")
		}
	}
}

// LocalAddr implements net.Conn.
func (c *conn) LocalAddr() net.Addr { return c.laddr }

// RemoteAddr implements net.Conn.
func (c *conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline implements net.Conn.
func (c *conn) SetDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.rd.setLocked(c.n, t)
	c.wd.setLocked(c.n, t)
	return nil
}

// SetReadDeadline implements net.Conn.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.rd.setLocked(c.n, t)
	return nil
}

// SetWriteDeadline implements net.Conn.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.wd.setLocked(c.n, t)
	return nil
}

// sortedPairsLocked lists open connections in creation order: map order is
// random and would make traces differ between runs.
func (n *Network) sortedPairsLocked() []*connPair {
	ps := make([]*connPair, 0, len(n.pairs))
	for p := range n.pairs {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *connPair) int { return cmp.Compare(a.id, b.id) })
	return ps
}
