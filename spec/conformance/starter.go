package conformance

import (
	"testing"
	"time"
)

// StartDev, when set, starts an in-process server for `go test` runs given
// no -addr, and returns its base URL (http://127.0.0.1:port). It must stop
// the server through tb.Cleanup. It is nil until a test-only file of the
// implementation sets it; with it nil and no -addr the suite test skips.
var StartDev func(tb testing.TB) (addr string)

// DevReapWait is Options.ReapWait for a StartDev server.
var DevReapWait time.Duration

// DevAgent, when set, returns an agent binary of StartDev's kind (for
// Options.Agent), so that `go test` runs with no -addr also run the cases
// that start gossip members of their own.
var DevAgent func(tb testing.TB) (path string)
