package rpc

import (
	"context"
	"net"
	"net/http"
	"net/rpc"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Server serves forwarded requests with an http.Handler: the connections
// the Demux hands it, or connections given to serveConn directly.
type Server struct {
	logger  hclog.Logger
	handler atomic.Pointer[http.Handler]
	rpc     *rpc.Server // the Forward service, for protoMux connections
	workers *workerPool // run the Forward service's requests

	ctx    context.Context // ends every request's context on Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // open connections, closed by Close
	wg     sync.WaitGroup
}

// NewServer is a server without a handler: until SetHandler, every request
// is answered 500.
func NewServer(logger hclog.Logger) *Server {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	// 256 idle workers cover the requests in flight at 64 clients on every
	// server; a burst beyond starts more, which end when it is over.
	s := &Server{logger: logger, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}, workers: newWorkerPool(256)}
	r, err := newRPCServer(s)
	if err != nil {
		// Only a change to forwardService's methods can get here; every
		// protoMux connection is then closed at once.
		logger.Error("rpc: no forwarding service", "error", err)
	}
	s.rpc = r
	return s
}

// SetHandler sets the handler requests run on. A server's handler is its
// HTTP API, which is built on the server, hence after it.
func (s *Server) SetHandler(h http.Handler) { s.handler.Store(&h) }

// track registers conn for Close and counts one goroutine; false once the
// server is closed (conn is then closed).
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = conn.Close()
		return false
	}
	s.conns[conn] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	_ = conn.Close()
	s.wg.Done()
}

// serveConn serves conn, whose protocol byte (protoMux) has been read,
// until it ends.
func (s *Server) serveConn(conn net.Conn) {
	if !s.track(conn) {
		return
	}
	defer s.untrack(conn)
	s.serveRPC(conn)
}

// serveRPC serves conn's net/rpc calls until it ends: net/rpc reads them
// in this goroutine and runs each in one of its own.
func (s *Server) serveRPC(conn net.Conn) {
	if s.rpc == nil {
		return
	}
	s.rpc.ServeCodec(newServerConn(s, conn))
}

// run runs req on the handler, answering in a.
func (s *Server) run(ctx context.Context, req *Request, a *Answer) {
	if h := s.handler.Load(); h != nil {
		serveAnswer(ctx, *h, req, a)
		return
	}
	*a = Answer{resp: errorResponse(http.StatusInternalServerError, "server is starting")}
}

// Close ends every request in flight and every connection, and waits for
// their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		// A connection may already be closing on its own; either way it
		// is done.
		_ = c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.workers.close()
	return nil
}
