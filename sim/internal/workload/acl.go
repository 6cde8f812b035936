package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/simnet"
)

// A run with ACLs on (Config.ACL): the servers deny what no rule allows,
// write a management token at the start of each term, and each client gets
// a token of its own with the least it needs: write on its group's lock
// key and the plain keys, session write and node write (its agent check)
// on its agent's node, and write on its prepared queries. Besides its
// ordinary steps, a client now and then tries something its token does
// not allow (forbiddenStep), so the acl-enforced check has refusals to
// judge and a server that does not enforce shows.

// aclSetupNode is the simulated host the tokens are created from.
const aclSetupNode = "acl-setup"

// forbiddenKeyPrefix is where a client's forbidden writes go: no token's
// rules name it.
const forbiddenKeyPrefix = "acl/forbidden/"

// planACL draws the run's ACL setup: the management secret and one token
// per client, every ID from the seed so that runs repeat.
func planACL(seed uint64, hdr *core.RunHeader) *core.ACLSetup {
	r := core.Stream(seed, "acl")
	setup := &core.ACLSetup{DefaultPolicy: "deny", Management: core.DrawUUID(r), Tokens: map[string]core.ACLToken{}}
	for _, ci := range hdr.Clients {
		g := hdr.Groups[ci.Group]
		setup.Tokens[ci.Name] = core.ACLToken{AccessorID: core.DrawUUID(r), SecretID: core.DrawUUID(r), Rules: clientRules(ci, g.Key)}
	}
	return setup
}

// clientRules are the rules of ci's one policy.
func clientRules(ci core.ClientInfo, lockKey string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "key %q { policy = \"write\" }\n", lockKey)
	for _, k := range kvKeys {
		fmt.Fprintf(&b, "key %q { policy = \"write\" }\n", k)
	}
	fmt.Fprintf(&b, "session %q { policy = \"write\" }\n", ci.Agent)
	fmt.Fprintf(&b, "node %q { policy = \"write\" }\n", ci.Agent)
	fmt.Fprintf(&b, "query_prefix %q { policy = \"write\" }\n", ci.Name+"-q")
	return b.String()
}

// aclSetupLimit bounds the setup in virtual time: the cluster is up, so
// only a fault-free election can be in the way.
const aclSetupLimit = 30 * time.Second

// createACLTokens creates each client's policy and token through the API
// with the management token, asking the servers in turn until each write
// is answered; a write answered as already done (a retry of one that took
// effect) counts as done.
func createACLTokens(network *simnet.Network, rec *core.Recorder, hdr core.RunHeader) error {
	setup := hdr.ACL
	hc := &http.Client{Transport: core.SimTransport(network, aclSetupNode)}
	deadline := rec.Elapsed() + aclSetupLimit
	put := func(path string, body any) error {
		buf, err := json.Marshal(body)
		if err != nil {
			return err
		}
		var last string
		for try := 0; rec.Elapsed() < deadline; try++ {
			server := hdr.Servers[try%len(hdr.Servers)]
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+server+":"+core.HttpPort+path, bytes.NewReader(buf))
			if err != nil {
				cancel()
				return err
			}
			req.Header.Set("X-Consul-Token", setup.Management)
			resp, err := hc.Do(req)
			if err == nil {
				out, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				last = fmt.Sprintf("%d %s", resp.StatusCode, out)
				if resp.StatusCode == http.StatusOK || strings.Contains(string(out), "already") {
					cancel()
					return nil
				}
				if resp.StatusCode == http.StatusBadRequest {
					cancel()
					return fmt.Errorf("PUT %s: %s", path, last) // a write the tables refuse will not change
				}
			} else {
				last = err.Error()
			}
			cancel()
			time.Sleep(time.Second)
		}
		return fmt.Errorf("PUT %s: not done within %v: %s", path, aclSetupLimit, last)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range setup.Tokens {
			if !yield(n) {
				return
			}
		}
	})
	for i, name := range names {
		tok := setup.Tokens[name]
		policy := fmt.Sprintf("sim-client-%d", i) // client names hold '+', which policy names may not
		if err := put("/v1/acl/policy", map[string]string{"Name": policy, "Rules": tok.Rules}); err != nil {
			return fmt.Errorf("sim: acl setup: %w", err)
		}
		if err := put("/v1/acl/token", map[string]any{"AccessorID": tok.AccessorID, "SecretID": tok.SecretID,
			"Description": "sim client " + name, "Policies": []map[string]string{{"Name": policy}}}); err != nil {
			return fmt.Errorf("sim: acl setup: %w", err)
		}
	}
	rec.Add(core.Event{Kind: core.KindNote, Node: aclSetupNode, Msg: fmt.Sprintf("acl: %d client tokens created", len(names))})
	return nil
}

// aclPlan draws a client's forbidden attempts from a stream of its own, so
// that its ordinary steps are drawn as in a run without ACLs.
type aclPlan struct{ r *rand.Rand }

func newACLPlan(seed uint64, client string) *aclPlan {
	return &aclPlan{r: core.Stream(seed, "acl/"+client)}
}

// forbidden says whether this step begins with a forbidden attempt, and
// which of the four.
func (p *aclPlan) forbidden() (int, bool) {
	if p.r.IntN(8) != 0 {
		return 0, false
	}
	return p.r.IntN(4), true
}

// forbiddenStep tries one thing w's token does not allow: a write and a
// lock of a key no rule names, a read of another group's lock key, or a
// session on a server's node. Each must be refused with 403; should one
// be applied (a server that does not enforce), the client undoes what it
// can so the rest of the run stays as it was.
func (w *Worker) forbiddenStep(kind int, otherKey string) {
	key := forbiddenKeyPrefix + w.Name
	switch kind {
	case 0:
		w.Api.Kv(model.KVOp{Verb: model.KVSet, Key: key, Value: []byte(w.Value())})
	case 1:
		if w.Session == "" {
			return
		}
		if r := w.Api.Kv(model.KVOp{Verb: model.KVLock, Key: key + "/lock", Session: w.Session, Value: []byte(w.Value())}); r.Outcome == core.OutOK && r.OK {
			w.Api.Kv(model.KVOp{Verb: model.KVUnlock, Key: key + "/lock", Session: w.Session})
		}
	case 2:
		w.Api.Get(otherKey)
	case 3:
		r := w.Api.Create(model.CreateSession{Name: w.Name + "-forbidden", Node: forbiddenNode, Checks: []string{}, Behavior: model.BehaviorRelease})
		if r.Outcome == core.OutOK && r.SessionID != "" {
			w.Api.Destroy(r.SessionID)
		}
	}
}

// forbiddenNode is the node a client may not create sessions on: a
// server's, which no client's rules name.
const forbiddenNode = "n1"
