package rpc

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The first byte of a connection to the server port. 1 and 4 are the
// numbers Consul gives its raft and multiplexed RPC connections.
const (
	protoRaft byte = 1 // raft's NetworkTransport (RaftLayer)
	protoMux  byte = 4 // net/rpc calls of forwarded requests (Pool, codec.go)
)

// Bounds of the demultiplexer: how long a new connection has to send its
// protocol byte (its TLS handshake included), and how many may be waiting
// to at once (a peer that opens
// connections and sends nothing must not pile up goroutines and sockets;
// past the bound, accepting pauses).
const (
	classifyTimeout = 5 * time.Second
	maxUnclassified = 64
)

// Demux accepts connections on the server port and hands each to raft or to
// the forwarding Server, by its first byte.
type Demux struct {
	ln     net.Listener
	raft   *RaftLayer // nil: raft connections are refused
	srv    *Server
	tls    *PortTLS // nil: plain connections only
	logger hclog.Logger
	slots  chan struct{}

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // accepted, protocol byte not yet read
	wg      sync.WaitGroup
	done    chan struct{}
}

// NewDemux starts accepting on ln. With raftDial set, raft connections go
// to the returned Demux's RaftLayer, which dials peers with raftDial; nil
// refuses raft. srv serves forwarded requests. portTLS, if set, answers
// connections that ask for TLS and may require it. Close stops it, srv
// included.
func NewDemux(ln net.Listener, srv *Server, raftDial Dial, portTLS *PortTLS, logger hclog.Logger) *Demux {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	d := &Demux{ln: ln, srv: srv, tls: portTLS, logger: logger, slots: make(chan struct{}, maxUnclassified),
		pending: map[net.Conn]struct{}{}, done: make(chan struct{})}
	if raftDial != nil {
		d.raft = newRaftLayer(ln.Addr(), raftDial)
	}
	d.wg.Add(1)
	go d.accept()
	return d
}

// RaftLayer is the raft stream layer on this port (nil without raft).
func (d *Demux) RaftLayer() *RaftLayer { return d.raft }

func (d *Demux) accept() {
	defer d.wg.Done()
	for {
		select {
		case d.slots <- struct{}{}:
		case <-d.done:
			return
		}
		conn, err := d.ln.Accept()
		if err != nil {
			<-d.slots
			select {
			case <-d.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			d.logger.Warn("rpc: accept failed", "error", err)
			// Out of descriptors and the like: give it a moment.
			select {
			case <-time.After(50 * time.Millisecond):
			case <-d.done:
				return
			}
			continue
		}
		if !d.hold(conn) {
			<-d.slots
			return
		}
		d.wg.Add(1)
		go d.classify(conn)
	}
}

// hold records conn as unclassified; false once closed.
func (d *Demux) hold(conn net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = conn.Close()
		return false
	}
	d.pending[conn] = struct{}{}
	return true
}

func (d *Demux) classify(raw net.Conn) {
	defer d.wg.Done()
	// One deadline for the protocol byte and, for TLS, the handshake and
	// the byte inside it.
	_ = raw.SetDeadline(time.Now().Add(classifyTimeout))
	conn, b, err := d.open(raw)
	d.mu.Lock()
	delete(d.pending, raw)
	d.mu.Unlock()
	<-d.slots
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil {
		d.logger.Debug("rpc: connection sent no protocol byte", "remote", raw.RemoteAddr(), "error", err)
		_ = raw.Close()
		return
	}
	tc, isTLS := conn.(*tls.Conn)
	if d.tls != nil && d.tls.Required && !isTLS {
		// Consul's words for the same refusal.
		d.logger.Warn("rpc: Non-TLS connection attempted with VerifyIncoming set", "remote", raw.RemoteAddr())
		_ = raw.Close()
		return
	}
	switch {
	case b == protoRaft && d.raft != nil:
		if isTLS && d.tls.AuthorizeRaft != nil {
			if err := d.tls.AuthorizeRaft(tc.ConnectionState()); err != nil {
				d.logger.Warn("rpc: "+err.Error(), "remote", raw.RemoteAddr())
				_ = raw.Close()
				return
			}
		}
		d.raft.deliver(conn)
	case b == protoMux:
		d.srv.serveConn(conn)
	default:
		d.logger.Debug("rpc: unknown protocol byte", "remote", raw.RemoteAddr(), "byte", b)
		_ = raw.Close()
	}
}

// open reads raw's protocol byte; a connection that asks for TLS is
// answered with the port's TLS and its protocol byte read inside it (conn
// is then the TLS connection). A second protoTLS inside TLS is refused,
// so no peer can nest handshakes.
func (d *Demux) open(raw net.Conn) (conn net.Conn, b byte, err error) {
	if b, err = readByte(raw); err != nil || b != protoTLS {
		return raw, b, err
	}
	if d.tls == nil || d.tls.Config == nil {
		return nil, 0, errors.New("asked for TLS, but this server has no certificate")
	}
	tc := tls.Server(raw, d.tls.Config)
	if err := tc.Handshake(); err != nil {
		// A peer refused for its certificate is worth an operator's eye.
		d.logger.Warn("rpc: TLS handshake failed", "remote", raw.RemoteAddr(), "error", err)
		return nil, 0, fmt.Errorf("tls handshake: %w", err)
	}
	if b, err = readByte(tc); err != nil {
		return nil, 0, err
	}
	if b == protoTLS {
		return nil, 0, errors.New("TLS asked for again inside TLS")
	}
	return tc, b, nil
}

func readByte(r io.Reader) (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// Close stops accepting, closes connections not yet classified, the raft
// layer and the Server, and waits for every goroutine the Demux started.
func (d *Demux) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	close(d.done)
	for c := range d.pending {
		_ = c.Close()
	}
	d.mu.Unlock()
	err := d.ln.Close()
	if d.raft != nil {
		_ = d.raft.Close()
	}
	err = errors.Join(err, d.srv.Close())
	d.wg.Wait()
	return err
}
