package rpc

import (
	"errors"
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
// protocol byte, and how many may be waiting to at once (a peer that opens
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
// refuses raft. srv serves forwarded requests. Close stops it, srv
// included.
func NewDemux(ln net.Listener, srv *Server, raftDial Dial, logger hclog.Logger) *Demux {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	d := &Demux{ln: ln, srv: srv, logger: logger, slots: make(chan struct{}, maxUnclassified),
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

func (d *Demux) classify(conn net.Conn) {
	defer d.wg.Done()
	_ = conn.SetReadDeadline(time.Now().Add(classifyTimeout))
	var b [1]byte
	_, err := conn.Read(b[:])
	d.mu.Lock()
	delete(d.pending, conn)
	d.mu.Unlock()
	<-d.slots
	if err == nil {
		err = conn.SetReadDeadline(time.Time{})
	}
	if err != nil {
		d.logger.Debug("rpc: connection sent no protocol byte", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return
	}
	switch {
	case b[0] == protoRaft && d.raft != nil:
		d.raft.deliver(conn)
	case b[0] == protoMux:
		d.srv.serveConn(conn)
	default:
		d.logger.Debug("rpc: unknown protocol byte", "remote", conn.RemoteAddr(), "byte", b[0])
		_ = conn.Close()
	}
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
