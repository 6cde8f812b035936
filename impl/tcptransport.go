package impl

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// NewTCPTransport returns a raft transport serving on ln, which must be a TCP
// listener on a concrete (advertisable) address. Passing an open listener,
// rather than an address for raft to bind, lets tests and tools pick free
// ports with 127.0.0.1:0 and know them before any server starts.
func NewTCPTransport(ln net.Listener, logger hclog.Logger) (*raft.NetworkTransport, error) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		return nil, errors.Join(fmt.Errorf("raft transport: %s is not an advertisable TCP address", ln.Addr()), ln.Close())
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  tcpStream{ln},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  logger,
	}), nil
}

// tcpStream is a raft.StreamLayer over a TCP listener.
type tcpStream struct{ net.Listener }

func (tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}
