package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/tenurekv/tenure/sim/simnet"
)

// gossipPort is every simulated agent's LAN gossip port.
const gossipPort = 8301

// simGossip adjusts memberlist's configuration for the simulator, keeping
// every timing at Consul's defaults: compression is off, since it only
// changes the bytes on the wire, which the simulated network does not
// charge for, and it was the largest share of a run's CPU (an LZW table
// per packet). The probe interval is longer than Consul's by probeSkew,
// which is all that differs in timing.
func simGossip(c *memberlist.Config) {
	c.EnableCompression = false
	c.ProbeInterval += probeSkew
}

// probeSkew keeps memberlist's probe and gossip tickers apart. Both start
// at the same instant and Consul's intervals (1 s, 200 ms) are multiples,
// so on virtual time every probe tick fell on a gossip tick, and which of
// the two goroutines ran first decided which packet carried the pending
// broadcasts: the scheduler's choice, and a seed did not replay. On a real
// clock the two never fire at the same nanosecond. With the skew they meet
// again only after 200 ms / probeSkew ≈ 115 000 probes (32 hours).
const probeSkew = 1731 * time.Nanosecond

// gossipNames gives each simulated node a made-up IPv4 address, because
// memberlist addresses members by IP while the simulated network names
// nodes. Both directions are fixed before any agent starts.
type gossipNames struct {
	ips   map[string]net.IP
	nodes map[string]string // IP string → node
}

func newGossipNames(nodes []string) *gossipNames {
	g := &gossipNames{ips: map[string]net.IP{}, nodes: map[string]string{}}
	for i, n := range nodes {
		ip := net.IPv4(10, 0, byte(i/250), byte(i%250+1))
		g.ips[n], g.nodes[ip.String()] = ip, n
	}
	return g
}

// catalogAddr is the Address the catalog records for a node: with gossip,
// its made-up IP (the leader's reconcile writes the member's gossip
// address); without, the host of its HTTP address, which a gossip-less
// server's self-registration writes. g may be nil.
func (g *gossipNames) catalogAddr(node string) string {
	if g == nil {
		return node
	}
	return g.ips[node].String()
}

// addr is a node's gossip address as memberlist dials it.
func (g *gossipNames) addr(node string) string {
	return net.JoinHostPort(g.ips[node].String(), strconv.Itoa(gossipPort))
}

// node maps a memberlist address back to its simulated node.
func (g *gossipNames) node(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("gossip address %q: %w", addr, err)
	}
	n, ok := g.nodes[host]
	if !ok {
		return "", fmt.Errorf("gossip address %q names no simulated node", addr)
	}
	return n, nil
}

// gossipTransport is memberlist's transport on the simulated network:
// packets are simnet datagrams (lost, delayed, held like any message) and
// streams are simnet connections, so partitions, loss and pauses reach the
// failure detector as they would over UDP and TCP.
type gossipTransport struct {
	names    *gossipNames
	node     string
	ep       *simnet.PacketEndpoint
	ln       net.Listener
	dial     simnet.DialFunc
	packets  chan *memberlist.Packet
	streams  chan net.Conn
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

var _ memberlist.Transport = (*gossipTransport)(nil)

func newGossipTransport(n *simnet.Network, names *gossipNames, node string) (*gossipTransport, error) {
	self := net.JoinHostPort(node, strconv.Itoa(gossipPort))
	ep, err := n.ListenPacket(self)
	if err != nil {
		return nil, err
	}
	ln, err := n.Listen(self)
	if err != nil {
		ep.Close()
		return nil, err
	}
	t := &gossipTransport{names: names, node: node, ep: ep, ln: ln, dial: n.Dialer(node),
		packets: make(chan *memberlist.Packet), streams: make(chan net.Conn), done: make(chan struct{})}
	t.wg.Add(2)
	go t.readPackets()
	go t.acceptStreams()
	return t, nil
}

func (t *gossipTransport) readPackets() {
	defer t.wg.Done()
	for {
		select {
		case p := <-t.ep.Packets():
			from := &net.UDPAddr{IP: t.names.ips[nodeOfAddr(p.From)], Port: gossipPort}
			select {
			case t.packets <- &memberlist.Packet{Buf: p.Data, From: from, Timestamp: p.At}:
			case <-t.done:
				return
			}
		case <-t.done:
			return
		}
	}
}

func (t *gossipTransport) acceptStreams() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		select {
		case t.streams <- c:
		case <-t.done:
			_ = c.Close()
			return
		}
	}
}

func nodeOfAddr(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// FinalAdvertiseAddr is this node's made-up IP and the gossip port.
func (t *gossipTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.names.ips[t.node], gossipPort, nil
}

// WriteTo sends a gossip packet; like UDP it does not report loss.
func (t *gossipTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	node, err := t.names.node(addr)
	if err != nil {
		return time.Time{}, err
	}
	return time.Now(), t.ep.SendTo(b, net.JoinHostPort(node, strconv.Itoa(gossipPort)))
}

func (t *gossipTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// DialTimeout opens a gossip stream (push-pull, TCP fallback pings).
func (t *gossipTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	node, err := t.names.node(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return t.dial(ctx, "tcp", net.JoinHostPort(node, strconv.Itoa(gossipPort)))
}

func (t *gossipTransport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown unbinds both addresses and stops the transport's goroutines.
func (t *gossipTransport) Shutdown() error {
	var err error
	t.stopOnce.Do(func() {
		close(t.done)
		t.ep.Close()
		err = t.ln.Close()
		t.wg.Wait()
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("gossip transport %s: %w", t.node, err)
	}
	return nil
}
