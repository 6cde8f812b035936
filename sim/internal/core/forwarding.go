package core

import (
	"context"
	"net"

	"github.com/tenurekv/tenure/impl/rpc"
	"github.com/tenurekv/tenure/sim/simnet"
)

// ServerPort is every simulated server's server port on the simulated
// network. Only forwarded requests use it: the simulator's raft travels as
// simnet messages addressed by node name.
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

// simPool is the forwarding pool of node from: one connection per request
// over the simulated network (rpc.PoolConfig.Single: yamux cannot run in a
// synctest bubble, and a connection per request keeps which request
// travels where independent of goroutine scheduling, as SimTransport's
// disabled keep-alives do for clients).
func simPool(n *simnet.Network, from string) *rpc.Pool {
	dial := n.Dialer(from)
	return rpc.NewPool(rpc.PoolConfig{Single: true, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		return dial(ctx, "sim", serverPortAddr(addr))
	}})
}
