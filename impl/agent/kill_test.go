package agent

import (
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/internal/server"
)

// pipeListener hands out the server ends of in-memory pipes, so an agent
// runs inside a synctest bubble without real sockets.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8500} }

// TestKillDoesNotWaitForClients: with a client connected that has sent
// nothing, Shutdown waits its grace for the connection to finish, while
// Kill (the simulator's crash) cuts it at once, as kill -9 would.
func TestKillDoesNotWaitForClients(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*Agent) error
		took time.Duration
	}{
		{"shutdown", (*Agent).Shutdown, 2 * time.Second},
		{"kill", (*Agent).Kill, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := newPipeListener()
				a, err := New(Config{Server: server.Config{NodeName: "dev", Dev: true}, Listener: ln})
				if err != nil {
					t.Fatal(err)
				}
				<-a.Server().Registered()
				idle := ln.dial()
				defer idle.Close()
				synctest.Wait()
				start := time.Now()
				if err := tc.stop(a); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tc.took {
					t.Fatalf("%s took %v with an idle client connected, want %v", tc.name, took, tc.took)
				}
			})
		})
	}
}
