package simnet

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// listener accepts connections dialled to one address.
type listener struct {
	n    *Network
	addr Addr

	// Guarded by n.mu.
	pending []*conn
	wake    chan struct{}
	closed  bool
	done    chan struct{}
}

var _ net.Listener = (*listener)(nil)

// Listen binds address ("host:port"; the host is the node name) on the
// simulated network.
func (n *Network) Listen(address string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("simnet: Listen(%q): want host:port", address)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrNetworkClosed
	}
	if _, ok := n.listeners[address]; ok {
		return nil, fmt.Errorf("simnet: Listen(%q): address in use", address)
	}
	ln := &listener{n: n, addr: Addr(address), wake: make(chan struct{}), done: make(chan struct{})}
	n.listeners[address] = ln
	n.ctlLocked(Conn, host, "", "listen "+address, "")
	return ln, nil
}

// Accept implements net.Listener.
func (ln *listener) Accept() (net.Conn, error) {
	n := ln.n
	n.mu.Lock()
	for {
		if ln.closed {
			n.mu.Unlock()
			return nil, &net.OpError{Op: "accept", Net: "sim", Addr: ln.addr, Err: net.ErrClosed}
		}
		if len(ln.pending) > 0 {
			c := ln.pending[0]
			ln.pending[0] = nil
			ln.pending = ln.pending[1:]
			n.mu.Unlock()
			return c, nil
		}
		wake := ln.wake
		n.mu.Unlock()
		select {
		case <-wake:
		case <-ln.done:
		}
		n.mu.Lock()
	}
}

// Close implements net.Listener; connections not yet accepted are closed.
func (ln *listener) Close() error {
	ln.n.mu.Lock()
	defer ln.n.mu.Unlock()
	if ln.closed {
		return &net.OpError{Op: "close", Net: "sim", Addr: ln.addr, Err: net.ErrClosed}
	}
	ln.closeLocked()
	return nil
}

func (ln *listener) closeLocked() {
	if ln.closed {
		return
	}
	n := ln.n
	ln.closed = true
	close(ln.done)
	if n.listeners[string(ln.addr)] == ln {
		delete(n.listeners, string(ln.addr))
	}
	for _, c := range ln.pending {
		c.closeLocked()
	}
	ln.pending = nil
	n.ctlLocked(Conn, nodeOf(string(ln.addr)), "", "unlisten "+string(ln.addr), "")
}

// Addr implements net.Listener.
func (ln *listener) Addr() net.Addr { return ln.addr }

// DialFunc has the signature of net/http.Transport.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Dialer returns a dial function for connections from node from, for use as
// http.Transport.DialContext. A dial takes one round trip (SYN, SYNACK) on
// the network; it fails with ErrRefused at once if the network separates the
// two nodes, and after a round trip if nothing listens at address.
func (n *Network) Dialer(from string) DialFunc {
	return func(ctx context.Context, _, address string) (net.Conn, error) {
		return n.dial(ctx, from, address)
	}
}

// dialing tracks one dial in progress; guarded by n.mu.
type dialing struct {
	done      chan error // capacity 1, first outcome wins
	finished  bool
	abandoned bool
}

func (d *dialing) finish(err error) {
	if d.finished {
		return
	}
	d.finished = true
	d.done <- err
}

func (n *Network) dial(ctx context.Context, from, address string) (net.Conn, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "sim", Source: Addr(from), Addr: Addr(address), Err: err}
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil || host == "" || from == "" {
		return nil, opErr(fmt.Errorf("bad dial %q from %q: want host:port and a node name", address, from))
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, opErr(ErrNetworkClosed)
	}
	if n.down[from] {
		// A node that is down is a process being killed: whether one of
		// its goroutines still tries to redial before it notices is the
		// scheduler's choice, and no other node can tell. Not traced, so
		// that it does not decide whether a run replays.
		n.mu.Unlock()
		return nil, opErr(ErrRefused)
	}
	if n.cutLocked(from, host) || n.cutLocked(host, from) {
		n.ctlLocked(Conn, from, host, "refuse "+address, "partition")
		n.mu.Unlock()
		return nil, opErr(ErrRefused)
	}
	n.ports[from]++
	local := Addr(net.JoinHostPort(from, strconv.Itoa(40000+n.ports[from])))
	p := n.newPairLocked(from, host, local, Addr(address))
	c, s := p.client, p.server
	d := &dialing{done: make(chan error, 1)}
	refuse := func(why string) {
		n.breakPairLocked(p, why)
		d.finish(ErrRefused)
	}
	n.routeLocked(&envelope{
		from: from, to: host, stream: c.out, msg: streamMsg{"SYN " + address, 0},
		lost: refuse,
		deliver: func() {
			ln := n.listeners[address]
			if ln == nil {
				n.routeLocked(&envelope{
					from: host, to: from, stream: s.out, msg: streamMsg{"RST", 0},
					deliver: func() { refuse("no listener") },
					lost:    refuse,
				})
				return
			}
			ln.pending = append(ln.pending, s)
			close(ln.wake)
			ln.wake = make(chan struct{})
			n.routeLocked(&envelope{
				from: host, to: from, stream: s.out, msg: streamMsg{"SYNACK", 0},
				lost: refuse,
				deliver: func() {
					if d.abandoned {
						c.closeLocked()
					}
					d.finish(nil)
				},
			})
		},
	})
	n.mu.Unlock()

	select {
	case err := <-d.done:
		if err != nil {
			return nil, opErr(err)
		}
		return c, nil
	case <-ctx.Done():
		n.mu.Lock()
		defer n.mu.Unlock()
		// An outcome that raced in at the same instant wins, so the race
		// resolves the same way in every run.
		if d.finished {
			if err := <-d.done; err != nil {
				return nil, opErr(err)
			}
			return c, nil
		}
		d.abandoned = true
		// Closing sends a FIN behind the SYN, so a server that accepts this
		// connection reads EOF.
		c.closeLocked()
		return nil, opErr(context.Cause(ctx))
	}
}
