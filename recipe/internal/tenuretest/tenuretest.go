// Package tenuretest starts an in-process single-node tenure server (raft
// in memory, HTTP API on a loopback port) for the recipe tests, so they run
// without a Consul or tenure binary.
package tenuretest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tenurekv/tenure/impl"
	"github.com/tenurekv/tenure/impl/agent"
)

// Server is a running dev agent.
type Server struct {
	Addr  string // host:port of the HTTP API
	agent *agent.Agent
}

// Start starts a dev agent on 127.0.0.1 and waits until it has registered
// its own node (sessions default to that node's serfHealth check).
func Start() (*Server, error) {
	a, err := agent.New(agent.Config{Server: impl.Config{NodeName: "recipe-test", HTTPAddr: "127.0.0.1:0", Dev: true}})
	if err != nil {
		return nil, fmt.Errorf("tenuretest: dev agent: %w", err)
	}
	s := &Server{Addr: a.HTTPAddr(), agent: a}
	select {
	case <-a.Server().Registered():
	case <-time.After(30 * time.Second):
		return nil, errors.Join(errors.New("tenuretest: node not registered after 30s"), s.Stop())
	}
	return s, nil
}

// Stop shuts the agent down (HTTP, parked blocking reads, raft).
func (s *Server) Stop() error { return s.agent.Shutdown() }

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
