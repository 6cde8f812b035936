package conformance

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestQueryNearIPThroughAClientAgent: a prepared query's "_ip" names the
// caller's node when a client agent forwards the execution to a server,
// which sees only the client agent's connection: the client agent passes
// on the caller's address (the S89 case runs against the client agent).
// TestCoordinateCasesCatchBrokenServers shows the case fails on a server
// that reads the wrong address.
func TestQueryNearIPThroughAClientAgent(t *testing.T) {
	t.Parallel()
	if *flagAddr != "" {
		t.Skip("runs against an in-process server and client agent")
	}
	srv := agenttest.StartDevAgent(t, nil)
	cl := agenttest.StartClient(t, "nearip-client", srv)
	// The client agent forwards once gossip has told it of a server.
	leader := "http://" + cl.HTTPAddr() + "/v1/status/leader"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, err := http.Get(leader)
		if err == nil {
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode == http.StatusOK && len(body) > 2 && string(body) != `""` {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client agent knew no server within 30s")
		}
	}
	rep := Run(context.Background(), Options{Addr: "http://" + cl.HTTPAddr(), Profile: Consul,
		Filter: `^S89/query-near-ip-sorts-from-the-callers-node$`})
	if !rep.OK() || rep.Passed != 1 {
		for _, c := range rep.Cases {
			t.Logf("%s: %s %s", c.ID, c.Outcome, oneLine(c.Reason, 300))
		}
		t.Fatalf("the case does not pass through a client agent (%d passed, %d failed, %d skipped)", rep.Passed, rep.Failed, rep.Skipped)
	}
}
