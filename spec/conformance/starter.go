package conformance

import (
	"testing"
	"time"
)

// startDev, when set, starts an in-process server for `go test` runs given
// no -addr, and returns its base URL (http://127.0.0.1:port). It must stop
// the server through tb.Cleanup. It is nil until a test file of this
// package sets it (dev_test.go: a tenure dev agent); with it nil and no
// -addr the suite test skips.
var startDev func(tb testing.TB) (addr string)

// devReapWait is Options.ReapWait for a startDev server.
var devReapWait time.Duration

// devAgent, when set, returns an agent binary of startDev's kind (for
// Options.Agent), so that `go test` runs with no -addr also run the cases
// that start gossip members of their own.
var devAgent func(tb testing.TB) (path string)
