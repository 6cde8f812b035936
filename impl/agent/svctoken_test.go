package agent_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-uuid"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/internal/testlog"
)

// TestRegistrationTokens: with ACLs on and default deny, a client agent
// writes each service and check to the catalog with the token it was
// registered with (CONSUL.md §24): a service registered with a token that
// has service:write on it reaches the catalog; a check registered with a
// token of its own is written with that one; a config-file service with no
// token, on an agent with no default token, is written as anonymous and
// refused. After a restart on the same data directory the kept token is
// used again. No token shows in the agent's service and check lists or in
// its log.
func TestRegistrationTokens(t *testing.T) {
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) { c.ACL = aclConfig() })
	base := "http://" + srv.HTTPAddr()
	untilStatus(t, base+"/v1/acl/token/self", rootSecret, 200)
	agentTok := makeToken(t, srv.HTTPAddr(), "c1-node", `node "c1" { policy = "write" }`)
	webTok := makeToken(t, srv.HTTPAddr(), "web-write", `service "web" { policy = "write" }`)
	diskTok := makeToken(t, srv.HTTPAddr(), "c1-checks", `node "c1" { policy = "write" }`)

	dir := t.TempDir()
	id, err := uuid.GenerateUUID()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	start := func() (*agent.Client, *recordingForwarder) {
		t.Helper()
		pool := rpc.NewPool(rpc.PoolConfig{})
		t.Cleanup(func() { _ = pool.Close() })
		rec := &recordingForwarder{next: pool}
		cl := agenttest.StartClientWith(t, "c1", srv, func(c *agent.ClientConfig) {
			c.ACL = agent.ACLConfig{Enabled: true, DefaultPolicy: "deny", Tokens: map[string]string{"agent": agentTok}}
			c.Forward = rec
			c.DataDir, c.NodeID = dir, id
			c.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
		})
		return cl, rec
	}
	cl, rec := start()
	// Its node's record is written once a server is known, and the agent
	// can then ask one to decide its own endpoints.
	rec.await(t, "c1's node record", func(r ownRequest) bool { return r.node && r.status == 200 })
	cbase := "http://" + cl.HTTPAddr()
	if code, body := raw(t, "PUT", cbase+"/v1/agent/service/register", webTok, `{"ID":"web1","Name":"web","Check":{"CheckID":"web1-ttl","TTL":"1h"}}`); code != 200 {
		t.Fatalf("register web1: %d %s", code, body)
	}
	r := rec.await(t, "web1 written", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && r.writes("service:web1") && r.status != 0
	})
	if r.token != webTok || r.status != 200 || !r.writes("check:web1-ttl") {
		t.Fatalf("web1 written with token %q (web's %q), status %d, entries %v", r.token, webTok, r.status, r.entries)
	}
	if code, body := raw(t, "PUT", cbase+"/v1/agent/check/register", diskTok, `{"Name":"disk","TTL":"1h"}`); code != 200 {
		t.Fatalf("register disk: %d %s", code, body)
	}
	r = rec.await(t, "disk written", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && r.writes("check:disk") && r.status != 0
	})
	if r.token != diskTok || r.status != 200 {
		t.Fatalf("disk written with token %q (its own %q), status %d", r.token, diskTok, r.status)
	}
	// A config-file service without a token: nothing to fall back to.
	defs, err := agent.DecodeConfigDefinitions([][]byte{[]byte(`{"Name":"cfgsvc"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.LoadConfigDefinitions(defs); err != nil {
		t.Fatal(err)
	}
	r = rec.await(t, "cfgsvc's write answered", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && r.writes("service:cfgsvc") && r.status != 0
	})
	if r.token != acl.AnonymousSecret || r.status != 403 {
		t.Fatalf("cfgsvc written with token %q, status %d; want anonymous, refused", r.token, r.status)
	}
	code, body := raw(t, "GET", base+"/v1/catalog/node-services/c1", rootSecret, "")
	if code != 200 || !strings.Contains(body, `"web1"`) || strings.Contains(body, "cfgsvc") {
		t.Fatalf("c1's services in the catalog: %d %s", code, body)
	}
	code, body = raw(t, "GET", base+"/v1/health/node/c1", rootSecret, "")
	if code != 200 || !strings.Contains(body, `"disk"`) || !strings.Contains(body, `"web1-ttl"`) {
		t.Fatalf("c1's checks in the catalog: %d %s", code, body)
	}
	for _, path := range []string{"/v1/agent/services", "/v1/agent/checks", "/v1/agent/service/web1", "/v1/agent/health/service/id/web1"} {
		code, body := raw(t, "GET", cbase+path, rootSecret, "")
		if code != 200 && code != 503 { // the health of a critical service is 503
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if strings.Contains(body, webTok) || strings.Contains(body, diskTok) {
			t.Fatalf("GET %s shows a registration's token: %s", path, body)
		}
	}

	// The catalog loses web1 behind the agent's back; the restarted
	// agent's first full sync writes it back with the token it kept.
	if err := cl.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if code, body := raw(t, "PUT", base+"/v1/catalog/deregister", rootSecret, `{"Node":"c1","ServiceID":"web1"}`); code != 200 {
		t.Fatalf("deregister web1 from the catalog: %d %s", code, body)
	}
	_, rec = start()
	r = rec.await(t, "web1 written after the restart", func(r ownRequest) bool {
		return r.path == "/v1/catalog/register" && r.writes("service:web1") && r.status != 0
	})
	if r.token != webTok || r.status != 200 {
		t.Fatalf("after the restart web1 written with token %q, status %d", r.token, r.status)
	}
	if code, body := raw(t, "GET", base+"/v1/catalog/service/web", rootSecret, ""); code != 200 || !strings.Contains(body, `"web1"`) {
		t.Fatalf("web1 in the catalog after the restart: %d %s", code, body)
	}
	if out := logs.String(); strings.Contains(out, webTok) || strings.Contains(out, diskTok) {
		t.Fatalf("a registration's token reached the agent's log:\n%s", out)
	}
	if logs.String() == "" {
		t.Fatal("the agent logged nothing, so the log check proves nothing")
	}
}
