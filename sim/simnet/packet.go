package simnet

import (
	"fmt"
	"net"
	"slices"
	"time"
)

// Packet is one datagram as its receiver sees it.
type Packet struct {
	Data []byte
	From string // the sender's address, "node:port"
	At   time.Time
}

// packetMsg labels a datagram in the trace.
type packetMsg struct{ size int }

// PacketEndpoint receives the datagrams sent to one address. Datagrams
// follow the link's rules for RPCs: latency and jitter, DropRate losses,
// loss across a cut, holds while either end is paused; a datagram for an
// address nobody listens on is lost.
type PacketEndpoint struct {
	n    *Network
	addr string
	ch   chan Packet
	// closed is guarded by n.mu.
	closed bool
}

// packetBuffer bounds a receiver's queue; like a socket buffer, a full one
// drops what arrives.
const packetBuffer = 1024

// ListenPacket binds address ("host:port", host the node name) for
// datagrams.
func (n *Network) ListenPacket(address string) (*PacketEndpoint, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("simnet: ListenPacket(%q): want host:port", address)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrNetworkClosed
	}
	if n.packets == nil {
		n.packets = map[string]*PacketEndpoint{}
	}
	if _, ok := n.packets[address]; ok {
		return nil, fmt.Errorf("simnet: ListenPacket(%q): address in use", address)
	}
	ep := &PacketEndpoint{n: n, addr: address, ch: make(chan Packet, packetBuffer)}
	n.packets[address] = ep
	n.ctlLocked(Conn, host, "", "listen packets "+address, "")
	return ep, nil
}

// Packets delivers the datagrams that arrive; it is never closed, so a
// reader also watches its own shutdown.
func (ep *PacketEndpoint) Packets() <-chan Packet { return ep.ch }

// Addr is the bound address.
func (ep *PacketEndpoint) Addr() string { return ep.addr }

// Close unbinds the address; datagrams still in flight to it are lost.
func (ep *PacketEndpoint) Close() {
	ep.n.mu.Lock()
	defer ep.n.mu.Unlock()
	ep.closeLocked()
}

func (ep *PacketEndpoint) closeLocked() {
	if ep.closed {
		return
	}
	ep.closed = true
	if ep.n.packets[ep.addr] == ep {
		delete(ep.n.packets, ep.addr)
	}
}

// SendTo sends one datagram from this endpoint to address. Like UDP it
// reports no loss; it fails only on a closed endpoint or network.
func (ep *PacketEndpoint) SendTo(data []byte, address string) error {
	n := ep.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep.closed {
		return net.ErrClosed
	}
	if n.closed {
		return ErrNetworkClosed
	}
	buf := slices.Clone(data)
	from := ep.addr
	e := &envelope{from: nodeOf(from), to: nodeOf(address), msg: packetMsg{size: len(buf)}}
	e.ready = func() string {
		if dst := n.packets[address]; dst == nil || dst.closed {
			return "no packet listener on " + address
		}
		return ""
	}
	e.deliver = func() {
		dst := n.packets[address]
		select {
		case dst.ch <- Packet{Data: buf, From: from, At: time.Now()}:
		default:
			n.stats.Dropped++
		}
	}
	n.routeLocked(e)
	return nil
}
