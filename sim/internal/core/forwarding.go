package core

import (
	"context"
	"net"
)

// ServerPort is every simulated server's server port on the simulated
// network: raft (its NetworkTransport) and forwarded requests, as in the
// binary.
const ServerPort = "8300"

// serverPortAddr maps a server's raft address (its node name, what
// Backend.Leader reports in the simulator) or a host:port to the server
// port on that node.
func serverPortAddr(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	return net.JoinHostPort(host, ServerPort)
}

// serverDial is node from's rpc.Dial on the simulated network. A server's
// raft address starts as its node name (Peers) and becomes its gossip IP
// once the leader's reconcile records it from gossip, as Consul's does; the
// simulated network routes by node name, so an IP is looked up first.
func (c *Cluster) serverDial(from string) func(ctx context.Context, addr string) (net.Conn, error) {
	dial := c.net.Dialer(from)
	return func(ctx context.Context, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && c.gossip != nil {
			if node, ok := c.gossip.nodes[host]; ok {
				addr = net.JoinHostPort(node, port)
			}
		}
		return dial(ctx, "sim", addr)
	}
}
