package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// A run with Options.ACL: the servers deny what no rule allows and write
// an initial management token drawn from the seed; the processes start
// once that token is known to the servers, so their first requests are
// not refused for a token still on its way through raft.

// aclHost is the simulated host the harness asks from while it waits.
const aclHost = "acl-harness"

// aclWaitLimit bounds the wait in virtual time: the cluster is up and no
// fault has started, so only an election can be in the way.
const aclWaitLimit = 30 * time.Second

// planACL draws the run's ACL setup from the seed: default deny and the
// management secret, nothing else (the processes make their own tokens).
func planACL(seed uint64) *core.ACLSetup {
	return &core.ACLSetup{DefaultPolicy: "deny", Management: core.DrawUUID(core.Stream(seed, "acl")),
		Tokens: map[string]core.ACLToken{}}
}

// awaitACL returns once a server answers a read of the management token
// with it, asking the servers in turn; a run without ACLs returns at once.
func awaitACL(base *core.Base, hdr core.RunHeader) error {
	if hdr.ACL == nil {
		return nil
	}
	hc := &http.Client{Transport: core.SimTransport(base.Net, aclHost)}
	deadline := base.Rec.Elapsed() + aclWaitLimit
	last := "no answer"
	for try := 0; base.Rec.Elapsed() < deadline; try++ {
		server := hdr.Servers[try%len(hdr.Servers)]
		ok, answer := tokenKnown(hc, server, hdr.ACL.Management)
		if ok {
			base.Rec.Add(core.Event{Kind: core.KindNote, Node: aclHost, Msg: "acl: the management token is in place"})
			return nil
		}
		last = answer
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("sim: the servers did not know the management token within %v: %s", aclWaitLimit, last)
}

// tokenKnown reads the token's own record from server with it.
func tokenKnown(hc *http.Client, server, secret string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+server+":"+core.HttpPort+"/v1/acl/token/self", nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("X-Consul-Token", secret)
	resp, err := hc.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, body)
}
