package agent_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// recordingForwarder is a client agent's forwarder that notes the token
// of every catalog request the agent sends of its own accord: anti-entropy
// sends only these paths, and the test sends none of them itself.
type recordingForwarder struct {
	next rpc.Forwarder
	mu   sync.Mutex
	seen []ownRequest
}

type ownRequest struct {
	method, path, token string
	node                bool // a register of the node's record (it names the node's ID)
	// entries are the service and check IDs a register writes, as
	// "service:<id>" and "check:<id>".
	entries []string
	status  int // the answer's status, 0 when none came
}

// writes reports whether r writes entry ("service:<id>", "check:<id>").
func (r ownRequest) writes(entry string) bool { return slices.Contains(r.entries, entry) }

func (f *recordingForwarder) Forward(ctx context.Context, addr string, req *rpc.Request) (*rpc.Response, error) {
	resp, err := f.next.Forward(ctx, addr, req)
	if u, perr := url.ParseRequestURI(req.URI); perr == nil && (strings.HasPrefix(u.Path, "/v1/catalog/") || strings.HasPrefix(u.Path, "/v1/health/node/")) {
		var body struct {
			ID      string
			Service *struct{ ID string }
			Check   *struct{ CheckID string }
			Checks  []struct{ CheckID string }
		}
		_ = json.Unmarshal(req.Body, &body)
		r := ownRequest{method: req.Method, path: u.Path, token: req.Origin.Token, node: body.ID != ""}
		if body.Service != nil {
			r.entries = append(r.entries, "service:"+body.Service.ID)
		}
		if body.Check != nil {
			r.entries = append(r.entries, "check:"+body.Check.CheckID)
		}
		for _, c := range body.Checks {
			r.entries = append(r.entries, "check:"+c.CheckID)
		}
		if err == nil {
			r.status = resp.Status
		}
		f.mu.Lock()
		f.seen = append(f.seen, r)
		f.mu.Unlock()
	}
	return resp, err
}

// await polls until one recorded request satisfies match; the deadline
// only guards against a hang.
func (f *recordingForwarder) await(t *testing.T, what string, match func(ownRequest) bool) ownRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		for _, r := range f.seen {
			if match(r) {
				f.mu.Unlock()
				return r
			}
		}
		seen := append([]ownRequest(nil), f.seen...)
		f.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %s among %+v", what, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startRecordedClient(t *testing.T, node string, srv *agent.Agent, tokens map[string]string) (*agent.Client, *recordingForwarder) {
	t.Helper()
	pool := rpc.NewPool(rpc.PoolConfig{})
	t.Cleanup(func() { _ = pool.Close() })
	rec := &recordingForwarder{next: pool}
	cl := agenttest.StartClientWith(t, node, srv, func(c *agent.ClientConfig) {
		c.ACL = agent.ACLConfig{Enabled: true, DefaultPolicy: "deny", Tokens: tokens}
		c.Forward = rec
	})
	return cl, rec
}

// makeToken creates a policy of rules and a token holding it, through
// addr's API with the management token, and returns the token's secret.
func makeToken(t *testing.T, addr, name, rules string) string {
	t.Helper()
	pol, err := json.Marshal(map[string]string{"Name": name, "Rules": rules})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := raw(t, "PUT", "http://"+addr+"/v1/acl/policy", rootSecret, string(pol)); code != 200 {
		t.Fatalf("create policy %s: %d %s", name, code, body)
	}
	code, body := raw(t, "PUT", "http://"+addr+"/v1/acl/token", rootSecret, `{"Policies":[{"Name":"`+name+`"}]}`)
	if code != 200 {
		t.Fatalf("create token: %d %s", code, body)
	}
	var tok struct{ SecretID string }
	if err := json.Unmarshal([]byte(body), &tok); err != nil || tok.SecretID == "" {
		t.Fatalf("token answer %s: %v", body, err)
	}
	return tok.SecretID
}

// TestAgentWritesCarryItsTokens: a client agent's own catalog requests
// carry the token Consul's agent would send them with: its node's record,
// the full sync's reads and every deregistration acl.tokens.agent (else
// the default token, else anonymous), a service's registration the token
// it was registered with (the default one when the request named none); a
// token set through PUT /v1/agent/token is used from the next sync, and a
// registration made with a token that may write it reaches the catalog.
func TestAgentWritesCarryItsTokens(t *testing.T) {
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) { c.ACL = aclConfig() })
	base := "http://" + srv.HTTPAddr()
	untilStatus(t, base+"/v1/acl/token/self", rootSecret, 200)
	agentTok := makeToken(t, srv.HTTPAddr(), "c1-agent", `node "c1" { policy = "write" }
service_prefix "" { policy = "write" }`)

	cl, rec := startRecordedClient(t, "c1", srv, map[string]string{"agent": agentTok})
	rec.await(t, "node record with the agent token", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && r.node && r.token == agentTok
	})
	rec.await(t, "full-sync read with the agent token", func(r ownRequest) bool {
		return r.path == "/v1/catalog/node-services/c1" && r.token == agentTok
	})
	// A session create waits for the node's registration, which the agent
	// reads with its own token (S65).
	if code, body := raw(t, "PUT", "http://"+cl.HTTPAddr()+"/v1/session/create", rootSecret, ""); code != 200 {
		t.Fatalf("session create through c1: %d %s", code, body)
	}
	rec.await(t, "registration read with the agent token", func(r ownRequest) bool {
		return r.path == "/v1/health/node/c1" && r.token == agentTok
	})

	// A registration is written with the token it was made with; one
	// that names none keeps the default token of the moment.
	cbase := "http://" + cl.HTTPAddr()
	if code, body := raw(t, "PUT", cbase+"/v1/agent/service/register", rootSecret, `{"Name":"web"}`); code != 200 {
		t.Fatalf("register web: %d %s", code, body)
	}
	rec.await(t, "service register with the request's token", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && !r.node && r.token == rootSecret
	})
	if code, body := raw(t, "PUT", cbase+"/v1/agent/token/default", rootSecret, `{"Token":"`+agentTok+`"}`); code != 200 {
		t.Fatalf("set default token: %d %s", code, body)
	}
	if code, body := raw(t, "PUT", cbase+"/v1/agent/service/register", "", `{"Name":"api"}`); code != 200 {
		t.Fatalf("register api: %d %s", code, body)
	}
	rec.await(t, "service register with the default token", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && !r.node && r.token == agentTok
	})
	untilStatus(t, base+"/v1/catalog/service/api?token="+rootSecret, "", 200)
	if code, body := raw(t, "GET", base+"/v1/catalog/service/api", rootSecret, ""); code != 200 || !strings.Contains(body, `"c1"`) {
		t.Fatalf("api in the catalog: %d %s", code, body)
	}

	// A new agent token is used from the next sync: the deregistration.
	newTok := makeToken(t, srv.HTTPAddr(), "c1-agent-2", `node "c1" { policy = "write" }`)
	if code, body := raw(t, "PUT", cbase+"/v1/agent/token/agent", rootSecret, `{"Token":"`+newTok+`"}`); code != 200 {
		t.Fatalf("set agent token: %d %s", code, body)
	}
	if code, body := raw(t, "PUT", cbase+"/v1/agent/service/deregister/api", rootSecret, ""); code != 200 {
		t.Fatalf("deregister api: %d %s", code, body)
	}
	rec.await(t, "deregistration with the new agent token", func(r ownRequest) bool {
		return r.path == "/v1/catalog/deregister" && r.token == newTok
	})

	// An agent with no token of its own sends its record as anonymous.
	_, rec2 := startRecordedClient(t, "c2", srv, nil)
	rec2.await(t, "c2's node record as anonymous", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && r.node && r.token == acl.AnonymousSecret
	})
}

// TestAgentWritesCarryNoTokenWithACLsOff: with ACLs off the agent's own
// requests name no token, so a server decides nothing about them.
func TestAgentWritesCarryNoTokenWithACLsOff(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	pool := rpc.NewPool(rpc.PoolConfig{})
	t.Cleanup(func() { _ = pool.Close() })
	rec := &recordingForwarder{next: pool}
	agenttest.StartClientWith(t, "c1", srv, func(c *agent.ClientConfig) {
		c.ACL = agent.ACLConfig{Tokens: map[string]string{"agent": "unused"}}
		c.Forward = rec
	})
	r := rec.await(t, "node record", func(r ownRequest) bool { return r.path == "/v1/catalog/register" && r.node })
	if r.token != "" {
		t.Fatalf("node record with ACLs off carried token %q", r.token)
	}
}
