package impl

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/rpc"
)

// openServerPort serves the server port on ln, which must be a TCP listener
// on a concrete (advertisable) address: raft's transport and the forwarded
// requests srv serves share it, told apart by each connection's first byte
// (rpc.Demux). Passing an open listener, rather than an address to bind,
// lets tests and tools pick free ports with 127.0.0.1:0 and know them
// before any server starts.
func openServerPort(ln net.Listener, srv *rpc.Server, logger hclog.Logger) (*raft.NetworkTransport, *rpc.Demux, error) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		return nil, nil, errors.Join(fmt.Errorf("server port: %s is not an advertisable TCP address", ln.Addr()), ln.Close())
	}
	d := rpc.NewDemux(ln, srv, true, logger.Named("rpc"))
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
