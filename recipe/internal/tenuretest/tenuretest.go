// Package tenuretest starts an in-process single-node tenure server (raft
// in memory, HTTP API on a loopback port) for the recipe tests, so they run
// without a Consul or tenure binary.
package tenuretest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl"
	"github.com/tenurekv/tenure/impl/httpapi"
)

// Server is a running dev server and its HTTP front.
type Server struct {
	Addr string // host:port of the HTTP API
	srv  *impl.Server
	http *http.Server
}

// Start starts a dev server on 127.0.0.1 and waits until it has registered
// its own node (sessions default to that node's serfHealth check).
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tenuretest: listen: %w", err)
	}
	addr := ln.Addr().String()
	srv, err := impl.NewDevServer("recipe-test", addr, nil)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("tenuretest: dev server: %w", err)
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{})}
	go func() { _ = hs.Serve(ln) }()
	s := &Server{Addr: addr, srv: srv, http: hs}
	select {
	case <-srv.Registered():
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("tenuretest: node not registered after 30s")
	}
	return s, nil
}

// Stop closes the HTTP server (and its parked blocking reads) and shuts
// the server down.
func (s *Server) Stop() error {
	herr := s.http.Close()
	return errors.Join(herr, s.srv.Shutdown())
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared starts one server for the whole test binary on first use and
// returns its address; tests keep apart by using unique key names. The
// binary's TestMain calls StopShared after m.Run.
func Shared() (string, error) {
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		return "", sharedErr
	}
	return shared.Addr, nil
}

// StopShared stops the shared server if Shared started one.
func StopShared() error {
	var err error
	sharedOnce.Do(func() { sharedErr = errors.New("tenuretest: shared server already stopped") })
	if shared != nil {
		err = shared.Stop()
		shared = nil
	}
	return err
}

// Main is a TestMain body: run the tests, stop the shared server, exit.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "tenuretest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
