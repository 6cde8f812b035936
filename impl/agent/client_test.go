package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientAgentSessionsFollowItsGossipHealth (S2, S47, S53): a session
// created through a client agent belongs to the client's node and is bound
// to its serfHealth, so when the client stops without leaving, gossip
// declares it failed and the session and its lock go; a client that leaves
// has its node deregistered.
func TestClientAgentSessionsFollowItsGossipHealth(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	c1 := agenttest.StartClient(t, "client-1", srv)
	api1 := client(t, c1.HTTPAddr())

	self, err := api1.Agent().Self()
	if err != nil || self["Config"]["NodeName"] != "client-1" || self["Config"]["Server"] != false {
		t.Fatalf("client self: %+v %v", self["Config"], err)
	}
	eventually(t, "the client sees the server and itself", func() error {
		ms, err := api1.Agent().Members(false)
		if err != nil || len(ms) != 2 {
			return errorf("members %+v %v", ms, err)
		}
		return nil
	})

	sid, _, err := api1.Session().Create(&api.SessionEntry{LockDelay: time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("empty-body create through the client: %v", err)
	}
	info, _, err := api1.Session().Info(sid, nil)
	if err != nil || info == nil || info.Node != "client-1" || len(info.NodeChecks) != 1 || info.NodeChecks[0] != "serfHealth" {
		t.Fatalf("session through the client: %+v %v", info, err)
	}
	if ok, _, err := api1.KV().Acquire(&api.KVPair{Key: "locks/c1", Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire through the client: %v %v", ok, err)
	}

	direct := client(t, srv.HTTPAddr())
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed client's session and lock are gone", func() error {
		s, _, err := direct.Session().Info(sid, nil)
		if err != nil || s != nil {
			return errorf("session %+v %v", s, err)
		}
		kv, _, err := direct.KV().Get("locks/c1", nil)
		if err != nil || kv == nil || kv.Session != "" {
			return errorf("lock %+v %v", kv, err)
		}
		return nil
	})
	checks, _, err := direct.Health().Node("client-1", nil)
	if err != nil || len(checks) != 1 || checks[0].Status != api.HealthCritical {
		t.Fatalf("failed client's checks: %+v %v", checks, err)
	}

	c2 := agenttest.StartClient(t, "client-2", srv)
	api2 := client(t, c2.HTTPAddr())
	if _, _, err := api2.Session().CreateNoChecks(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := api2.Agent().Leave(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c2.Left():
	case <-time.After(10 * time.Second):
		t.Fatal("the client agent never reported leaving")
	}
	eventually(t, "the client that left is deregistered", func() error {
		n, _, err := direct.Catalog().Node("client-2", nil)
		if err != nil || n != nil {
			return errorf("node %+v %v", n, err)
		}
		return nil
	})

}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// TestLeftAgentWritesNothingMore (S53): an agent that has left halts its
// anti-entropy before it leaves, so a change it makes afterwards does not
// put its node back into the catalog the leader removed it from. (Written
// back, the node has no serfHealth, and no reconcile would remove it.)
func TestLeftAgentWritesNothingMore(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	c := agenttest.StartClient(t, "client-left", srv)
	capi, direct := client(t, c.HTTPAddr()), client(t, srv.HTTPAddr())
	eventually(t, "the client is registered", func() error {
		checks, _, err := direct.Health().Node("client-left", nil)
		if err != nil || len(checks) != 1 || checks[0].Status != api.HealthPassing {
			return errorf("checks %+v %v", checks, err)
		}
		return nil
	})
	if err := capi.Agent().Leave(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the client that left is deregistered", func() error {
		n, _, err := direct.Catalog().Node("client-left", nil)
		if err != nil || n != nil {
			return errorf("node %+v %v", n, err)
		}
		return nil
	})
	// A local change would start a sync at once if anti-entropy still ran.
	if err := capi.Agent().ServiceRegister(&api.AgentServiceRegistration{Name: "after-leave", Port: 1}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n, _, err := direct.Catalog().Node("client-left", nil); err != nil || n != nil {
			t.Fatalf("the left agent's node is back in the catalog: %+v %v", n, err)
		}
	}
}
