package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// awaitRegistered holds a session create until the leader has registered
// this agent's node with serfHealth passing (S47), for at most
// registerWait: an empty-body create binds to exactly that node and check.
func (a *clientAgent) awaitRegistered(ctx context.Context) {
	if a.registered.Load() {
		return
	}
	deadline := time.Now().Add(registerWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if a.nodePassing(ctx) {
			a.registered.Store(true)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// registerWait bounds awaitRegistered, as a server agent's registerWait does.
const registerWait = 10 * time.Second

// nodePassing asks a server whether this agent's serfHealth is passing.
func (a *clientAgent) nodePassing(ctx context.Context) bool {
	servers := a.servers()
	if len(servers) == 0 || a.opts.Forward == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// The agent's own read, with its own token: anonymous may not read
	// the node's checks once health reads are filtered.
	resp, err := a.opts.Forward.Forward(ctx, servers[0], &rpc.Request{Origin: rpc.Origin{Node: a.opts.Node, Token: a.opts.ACL.ownSecret()},
		Method: http.MethodGet, URI: "/v1/health/node/" + url.PathEscape(a.opts.Node)})
	if err != nil {
		return false
	}
	var checks []struct{ CheckID, Status string }
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &checks) != nil {
		return false
	}
	for _, c := range checks {
		if c.CheckID == "serfHealth" {
			return c.Status == "passing"
		}
	}
	return false
}
