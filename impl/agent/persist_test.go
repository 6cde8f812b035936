package agent_test

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-uuid"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// registerWithTTL registers service web1 with a TTL check and a node TTL
// check through c, and passes both with an output.
func registerWithTTL(t *testing.T, c *api.Client) {
	t.Helper()
	ag := c.Agent()
	if err := ag.ServiceRegister(&api.AgentServiceRegistration{ID: "web1", Name: "web", Tags: []string{"v1"}, Port: 80,
		Check: &api.AgentServiceCheck{CheckID: "web1-ttl", TTL: "1h"}}); err != nil {
		t.Fatal(err)
	}
	if err := ag.CheckRegister(&api.AgentCheckRegistration{ID: "node-ttl", Name: "node-ttl",
		AgentServiceCheck: api.AgentServiceCheck{TTL: "1h"}}); err != nil {
		t.Fatal(err)
	}
	if err := ag.UpdateTTL("web1-ttl", "serving", api.HealthPassing); err != nil {
		t.Fatal(err)
	}
	if err := ag.UpdateTTL("node-ttl", "fine", api.HealthWarning); err != nil {
		t.Fatal(err)
	}
}

// expectRestored checks that the agent at c has web1 and both checks with
// the statuses registerWithTTL gave them, and that anti-entropy has put
// them in the catalog of node.
func expectRestored(t *testing.T, c *api.Client, node string) {
	t.Helper()
	svcs, err := c.Agent().Services()
	if err != nil {
		t.Fatal(err)
	}
	if s := svcs["web1"]; s == nil || s.Service != "web" || s.Port != 80 || len(s.Tags) != 1 || s.Tags[0] != "v1" {
		t.Fatalf("services after the restart: %+v", svcs)
	}
	want := map[string][2]string{"web1-ttl": {api.HealthPassing, "serving"}, "node-ttl": {api.HealthWarning, "fine"}}
	chks, err := c.Agent().Checks()
	if err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		if ch := chks[id]; ch == nil || ch.Status != w[0] || ch.Output != w[1] {
			t.Fatalf("check %s after the restart: %+v, want %v", id, ch, w)
		}
	}
	eventually(t, "the restored registrations are in the catalog", func() error {
		cs, _, err := c.Health().Node(node, nil)
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, ch := range cs {
			got[ch.CheckID] = ch.Status
		}
		for id, w := range want {
			if got[id] != w[0] {
				return errorf("catalog checks %v", got)
			}
		}
		return nil
	})
}

// TestServerAgentKeepsRegistrationsAcrossRestarts: a durable server agent
// restarted on its data directory comes back with the services and checks
// registered through its API, TTL statuses included, and anti-entropy
// writes them to the catalog again; a deregistration stays done across
// the next restart.
func TestServerAgentKeepsRegistrationsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	id, err := uuid.GenerateUUID()
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ""
	start := func() *agent.Agent {
		t.Helper()
		addr := raftAddr
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		raftAddr = ln.Addr().String()
		a, err := agent.New(agent.Config{Server: server.Config{NodeName: "solo", NodeID: id, HTTPAddr: "127.0.0.1:0",
			DataDir: dir, ServerListener: ln, Peers: []server.Peer{{Name: "solo", RaftAddr: raftAddr}}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		select {
		case <-a.Server().Registered():
		case <-time.After(30 * time.Second):
			t.Fatal("the server never registered itself")
		}
		return a
	}
	a := start()
	registerWithTTL(t, client(t, a.HTTPAddr()))
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	a = start()
	c := client(t, a.HTTPAddr())
	expectRestored(t, c, "solo")

	if err := c.Agent().ServiceDeregister("web1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	a = start()
	svcs, err := client(t, a.HTTPAddr()).Agent().Services()
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 0 {
		t.Fatalf("a deregistered service came back: %v", svcs)
	}
}

// TestClientAgentKeepsRegistrationsAcrossRestarts: the same for a client
// agent with a data directory, restarted under its name and node ID.
func TestClientAgentKeepsRegistrationsAcrossRestarts(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	dir := t.TempDir()
	id, err := uuid.GenerateUUID()
	if err != nil {
		t.Fatal(err)
	}
	mod := func(cfg *agent.ClientConfig) { cfg.DataDir, cfg.NodeID = dir, id }
	cl := agenttest.StartClientWith(t, "c1", srv, mod)
	registerWithTTL(t, client(t, cl.HTTPAddr()))
	if err := cl.Shutdown(); err != nil {
		t.Fatal(err)
	}
	cl = agenttest.StartClientWith(t, "c1", srv, mod)
	expectRestored(t, client(t, cl.HTTPAddr()), "c1")
}
