package agenttest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	netrpc "net/rpc"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// ForwardErrors drives real forwarding pools (what a client agent sends
// through) to the three errors a client agent can report after forwarding a
// request to addr, so that the simulator classifies the exact wording
// rather than a copy of it:
//
//   - dialed: the one dial failed with refused; nothing was sent;
//   - sent: the server's end closed while the request waited for its
//     answer;
//   - shutDown: every pooled connection had been closed by its server
//     while idle and the dial for a fresh one was refused; nothing was
//     sent.
//
// The connections are in-memory pipes whose far ends read everything and
// never answer. Call it inside a synctest bubble: synctest.Wait is how it
// knows a pipe has gone quiet.
func ForwardErrors(tb testing.TB, addr string, refused error) (dialed, sent, shutDown error) {
	tb.Helper()
	newPool := func() (*rpc.Pool, *[]net.Conn, *atomic.Bool) {
		// Dials run in a Forward's goroutine, each before the test reads
		// peers (after that Forward's answer or a synctest.Wait).
		var peers []net.Conn
		var refuse atomic.Bool
		p := rpc.NewPool(rpc.PoolConfig{Dial: func(context.Context, string) (net.Conn, error) {
			if refuse.Load() {
				return nil, refused
			}
			c, s := net.Pipe()
			go func() { _, _ = io.Copy(io.Discard, s) }()
			peers = append(peers, s)
			return c, nil
		}})
		tb.Cleanup(func() { _ = p.Close() })
		return p, &peers, &refuse
	}
	req := &rpc.Request{Method: http.MethodPut, URI: "/v1/session/create"}
	forward := func(p *rpc.Pool, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := p.Forward(ctx, addr, req)
			done <- err
		}()
		return done
	}

	p, _, refuse := newPool()
	refuse.Store(true)
	if _, dialed = p.Forward(context.Background(), addr, req); dialed == nil {
		tb.Fatal("a refused dial forwarded")
	}

	p, peers, _ := newPool()
	done := forward(p, context.Background())
	synctest.Wait() // written, waiting for the answer
	(*peers)[0].Close()
	if sent = <-done; sent == nil {
		tb.Fatal("a request forwarded with no answer")
	}

	// Requests whose callers give up leave their connections pooled;
	// once one is reused without a dial, every slot holds one.
	p, peers, refuse = newPool()
	for i := 0; ; i++ {
		if i == 64 {
			tb.Fatal("the pool dials a new connection for every request")
		}
		before := len(*peers)
		ctx, cancel := context.WithCancel(context.Background())
		done := forward(p, ctx)
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			tb.Fatalf("a cancelled forward: %v", err)
		}
		if len(*peers) == before {
			break
		}
	}
	for _, c := range *peers {
		c.Close()
	}
	synctest.Wait() // each connection's reader has seen its end
	refuse.Store(true)
	if _, shutDown = p.Forward(context.Background(), addr, req); !errors.Is(shutDown, netrpc.ErrShutdown) {
		tb.Fatalf("forward on a shut-down connection: %v", shutDown)
	}
	return dialed, sent, shutDown
}
