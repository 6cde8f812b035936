package recipe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// testClient is a Client on the test server using clock (nil = system).
func testClient(t testing.TB, clock Clock) *Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = agenttest.Addr(t)
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		c.Clock = clock
	}
	return c
}

// isTenure reports whether the server knows check-sequencer (S43): tenure
// answers a failed check, Consul an unknown verb.
func isTenure(t testing.TB, c *Client) bool {
	t.Helper()
	ok, resp, _, err := c.API.Txn().Txn(api.TxnOps{{KV: &api.KVTxnOp{
		Verb: "check-sequencer", Key: uniq("probe"), Session: "00000000-0000-0000-0000-000000000000", Index: 1,
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok || resp == nil || len(resp.Errors) == 0 {
		t.Fatalf("check-sequencer on a missing key succeeded: %+v", resp)
	}
	return !unknownVerb(resp.Errors[0].What)
}

// uniq makes a name no earlier run on the same server has used.
func uniq(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "recipe-test/" + prefix + "-" + hex.EncodeToString(b)
}

// testSession creates a session the test owns (destroyed at cleanup).
func testSession(t testing.TB, c *Client, o SessionOptions) string {
	t.Helper()
	id, err := c.createSession(context.Background(), o, api.SessionBehaviorRelease)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.API.Session().Destroy(id, nil) })
	return id
}

// recordingClock is the system clock that remembers every AfterFunc
// duration, so a test can see what the recipe chose to wait.
type recordingClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recordingClock) Now() time.Time { return time.Now() }

func (r *recordingClock) AfterFunc(d time.Duration, f func()) func() bool {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return time.AfterFunc(d, f).Stop
}

func (r *recordingClock) waited(d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.waits {
		if w == d {
			return true
		}
	}
	return false
}

// within fails the test if f does not return in d: a guard against hangs,
// not a timing assertion.
func within(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// noTTLChecks binds test sessions to their TTL only: the server's node check
// is not what these tests are about.
var noTTLChecks = []string{}

func shortSession() SessionOptions {
	return SessionOptions{TTL: 10 * time.Second, LockDelay: time.Second, Checks: noTTLChecks}
}
