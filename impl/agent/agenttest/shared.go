package agenttest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/tenurekv/tenure/impl/agent"
)

// addrEnv names the agent that tests using SharedAddr run against instead
// of the in-process one, host:port (a real Consul exercises the recipes'
// fallback paths).
const addrEnv = "TENURE_TEST_ADDR"

var (
	sharedOnce sync.Once
	shared     *agent.Agent
	sharedErr  error
)

// SharedAddr is the HTTP address (host:port) tests of one binary share:
// addrEnv's value when set, else a dev agent started on first use and stopped by
// Main. Tests keep apart by using unique key names.
func SharedAddr() (string, error) {
	if addr := os.Getenv(addrEnv); addr != "" {
		return addr, nil
	}
	sharedOnce.Do(func() {
		cfg, err := devConfig("shared-test")
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = newReady(cfg)
	})
	if sharedErr != nil {
		return "", sharedErr
	}
	return shared.HTTPAddr(), nil
}

// Addr is SharedAddr for a test: a failure to start stops the test.
func Addr(tb testing.TB) string {
	tb.Helper()
	addr, err := SharedAddr()
	if err != nil {
		tb.Fatalf("in-process tenure agent: %v", err)
	}
	return addr
}

// stopShared stops the shared agent if SharedAddr started one; later calls
// to SharedAddr fail.
func stopShared() error {
	var err error
	sharedOnce.Do(func() { sharedErr = errors.New("agenttest: shared agent already stopped") })
	if shared != nil {
		err = shared.Shutdown()
		shared = nil
	}
	return err
}

// Main is a TestMain body for binaries that use SharedAddr: run the tests,
// stop the shared agent, and return the exit code (failing if the stop did).
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "agenttest: stop shared agent:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
