package rpc

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// protoTLS is the first byte of a connection that turns TLS: the TLS
// handshake follows, then the protocol byte (protoRaft or protoMux)
// inside it. 3 is Consul's number for it (RPCTLS), so the port reads as
// Consul's does.
const protoTLS byte = 3

// PortTLS is the server port's TLS for the connections it accepts
// (Consul's tls.internal_rpc).
type PortTLS struct {
	// Config answers a connection that asks for TLS; nil refuses them
	// (the server has no certificate).
	Config *tls.Config
	// Required refuses every connection that does not ask for TLS
	// (verify_incoming).
	Required bool
	// AuthorizeRaft, if set, must accept the peer of a TLS connection
	// before it reaches raft: only servers may take part in raft, while a
	// client agent's certificate may still forward requests.
	AuthorizeRaft func(tls.ConnectionState) error
}

// TLSDial is d with every connection switched to TLS under cfg, as
// Consul's agents dial a server's port with verify_outgoing: protoTLS,
// then the handshake (within ctx, and within 10 s at most), after which
// the caller writes its protocol byte inside TLS.
func TLSDial(d Dial, cfg *tls.Config) Dial {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		conn, err := d(ctx, addr)
		if err != nil {
			return nil, err
		}
		if _, err := conn.Write([]byte{protoTLS}); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("tls to %s: %w", addr, err)
		}
		hctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}
