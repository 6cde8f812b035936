package server

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// openServerPort serves the server port on ln, which must listen on a
// concrete (advertisable) address: raft's transport and the forwarded
// requests srv serves share it, told apart by each connection's first byte
// (rpc.Demux), and raft dials its peers with dial; portTLS, if set, is
// the port's TLS (the dial is already TLS when outgoing TLS is on). Passing an open
// listener, rather than an address to bind, lets tests and tools pick free
// ports with 127.0.0.1:0 and know them before any server starts, and lets
// the simulator serve the port on its own network.
func openServerPort(ln net.Listener, srv *rpc.Server, dial rpc.Dial, portTLS *rpc.PortTLS, logger hclog.Logger) (*raft.NetworkTransport, *rpc.Demux, error) {
	if !advertisable(ln.Addr()) {
		return nil, nil, errors.Join(fmt.Errorf("server port: %s is not an advertisable address", ln.Addr()), ln.Close())
	}
	d := rpc.NewDemux(ln, srv, dial, portTLS, logger.Named("rpc"))
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  d.RaftLayer(),
		MaxPool: 3,
		Timeout: 10 * time.Second,
		// One AppendEntries in flight per follower: entries that arrive
		// while it is out go together in the next one, so a follower
		// fsyncs once per batch instead of once per leader write. It also
		// keeps raft's pipeline, which can stop replicating to a follower
		// for good after one refused write (hashicorp/raft#612), out of
		// use. DESIGN.md "Raft tuning" has the numbers.
		MaxRPCsInFlight: 1,
		Logger:          logger.Named("raft-net"),
	}), d, nil
}

// advertisable reports whether peers can dial addr as it is: a host (an IP
// that is not 0.0.0.0 or ::, or a name, as on the simulator's network) and
// a port.
func advertisable(addr net.Addr) bool {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil || host == "" || port == "" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsUnspecified()
}
