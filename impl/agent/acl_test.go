package agent_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/server"
)

const rootSecret = "5f2d6a3c-8a59-4f0e-9a3b-0d1c2e3f4a5b"

func aclConfig() agent.ACLConfig {
	return agent.ACLConfig{Enabled: true, DefaultPolicy: "deny", EnableTokenPersistence: true,
		Tokens: map[string]string{"initial_management": rootSecret}}
}

// raw sends one request with token ("" for none) and returns the status
// and body.
func raw(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Consul-Token", token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// untilStatus polls until url answers code; the deadline only guards
// against a hang.
func untilStatus(t *testing.T, url, token string, code int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := raw(t, "GET", url, token, "")
		if got == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %d %s", url, got, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestACLDevAgent: a dev agent with ACLs writes the builtins and the
// initial management token as it takes the lead (S87), and enforces the
// session and KV paths (S85).
func TestACLDevAgent(t *testing.T) {
	a := agenttest.StartDevAgent(t, func(c *agent.Config) { c.ACL = aclConfig() })
	base := "http://" + a.HTTPAddr()
	untilStatus(t, base+"/v1/acl/token/self", rootSecret, 200)

	cfg := api.DefaultNonPooledConfig()
	cfg.Address, cfg.Token = a.HTTPAddr(), rootSecret
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	untilStatus(t, base+"/v1/acl/token/"+"00000000-0000-0000-0000-000000000002", rootSecret, 200)
	toks, _, err := c.ACL().TokenList(nil)
	if err != nil || len(toks) != 2 {
		t.Fatalf("tokens: %v %v", toks, err)
	}
	pols, _, err := c.ACL().PolicyList(nil)
	if err != nil || len(pols) != 2 {
		t.Fatalf("policies: %v %v", pols, err)
	}
	if code, body := raw(t, "PUT", base+"/v1/acl/bootstrap", "", ""); code != 403 || !strings.HasPrefix(body, "Permission denied: ACL bootstrap no longer allowed (reset index: ") {
		t.Fatalf("bootstrap after initial management: %d %s", code, body)
	}
	if code, _ := raw(t, "PUT", base+"/v1/session/create", "", "{}"); code != 403 {
		t.Fatalf("anonymous session create: %d", code)
	}
	if _, _, err := c.Session().Create(nil, nil); err != nil {
		t.Fatalf("management session create: %v", err)
	}
	if code, _ := raw(t, "PUT", base+"/v1/kv/k", "", "v"); code != 403 {
		t.Fatalf("anonymous put: %d", code)
	}
	if got := func() string {
		res, err := http.Get(base + "/v1/status/leader")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.Header.Get("X-Consul-Default-ACL-Policy")
	}(); got != "deny" {
		t.Fatalf("default policy header %q", got)
	}
}

// durableServer starts a one-server cluster of its own on dir (raft on
// disk), with ACLs; restarting on the same dir keeps its state.
func durableServer(t *testing.T, dir string) *agent.Agent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Server: server.Config{NodeName: "n1", HTTPAddr: "127.0.0.1:0", DataDir: dir,
		ServerListener: ln, Peers: []server.Peer{{Name: "n1", RaftAddr: ln.Addr().String()}}}, ACL: aclConfig()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestACLSurvivesRestart: tokens and policies are replicated state, so a
// restarted server still resolves them; a token set through
// PUT /v1/agent/token with persistence on is read back from
// acl-tokens.json, which only its owner may read (S87).
func TestACLSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	a := durableServer(t, dir)
	base := "http://" + a.HTTPAddr()
	untilStatus(t, base+"/v1/acl/token/self", rootSecret, 200)
	code, body := raw(t, "PUT", base+"/v1/acl/policy", rootSecret, `{"Name":"kv","Rules":"key_prefix \"\" { policy = \"write\" }"}`)
	if code != 200 {
		t.Fatalf("policy: %d %s", code, body)
	}
	secret := "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	if code, body := raw(t, "PUT", base+"/v1/acl/token", rootSecret, `{"SecretID":"`+secret+`","Policies":[{"Name":"kv"}]}`); code != 200 {
		t.Fatalf("token: %d %s", code, body)
	}
	if code, body := raw(t, "PUT", base+"/v1/agent/token/default", rootSecret, `{"Token":"`+secret+`"}`); code != 200 {
		t.Fatalf("agent token: %d %s", code, body)
	}
	if code, _ := raw(t, "PUT", base+"/v1/kv/k", "", "v"); code != 200 {
		t.Fatalf("put with the default token: %d", code)
	}
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "acl-tokens.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("acl-tokens.json: %v %v", info, err)
	}

	a = durableServer(t, dir)
	defer func() {
		if err := a.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	base = "http://" + a.HTTPAddr()
	untilStatus(t, base+"/v1/acl/token/self", secret, 200)
	// The default token set before the restart still stands in.
	if code, body := raw(t, "PUT", base+"/v1/kv/k2", "", "v"); code != 200 {
		t.Fatalf("put with the persisted default token: %d %s", code, body)
	}
}

// TestACLClientAgent: a client agent forwards a request with the token it
// is decided with, and decides its own endpoints by asking a server (S86).
func TestACLClientAgent(t *testing.T) {
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) { c.ACL = aclConfig() })
	untilStatus(t, "http://"+srv.HTTPAddr()+"/v1/acl/token/self", rootSecret, 200)
	cl := agenttest.StartClientWith(t, "c1", srv, func(c *agent.ClientConfig) {
		c.ACL = agent.ACLConfig{Enabled: true, DefaultPolicy: "deny"}
	})
	base := "http://" + cl.HTTPAddr()
	untilStatus(t, base+"/v1/acl/token/self", rootSecret, 200)
	if code, _ := raw(t, "PUT", base+"/v1/kv/k", rootSecret, "v"); code != 200 {
		t.Fatalf("put through the client with a token: %d", code)
	}
	if code, body := raw(t, "PUT", base+"/v1/kv/k", "", "v"); code != 403 || !strings.Contains(body, "anonymous token") {
		t.Fatalf("put through the client without one: %d %s", code, body)
	}
	if code, body := raw(t, "PUT", base+"/v1/agent/token/default", "", `{"Token":"x"}`); code != 403 ||
		body != `Permission denied: anonymous token lacks permission 'agent:write' on "c1". The anonymous token is used implicitly when a request does not specify a token.` {
		t.Fatalf("anonymous agent token: %d %s", code, body)
	}
	if code, body := raw(t, "PUT", base+"/v1/agent/token/default", rootSecret, `{"Token":"`+rootSecret+`"}`); code != 200 {
		t.Fatalf("agent token with management: %d %s", code, body)
	}
	if code, _ := raw(t, "PUT", base+"/v1/kv/k", "", "v"); code != 200 {
		t.Fatalf("put through the client with its default token: %d", code)
	}
}
