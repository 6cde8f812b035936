package rpc

import (
	"context"
	"net"
	"time"
)

// Dial opens a connection to another server's port. Production dials TCP
// (DialTCP); the simulator gives its own network's, so that raft and
// forwarded requests travel where its faults are.
type Dial func(ctx context.Context, addr string) (net.Conn, error)

// dialTimeout bounds a TCP dial that ctx leaves unbounded.
const dialTimeout = 10 * time.Second

// DialTCP dials addr over TCP within ctx, and within 10 s at most.
func DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	return d.DialContext(ctx, "tcp", addr)
}
