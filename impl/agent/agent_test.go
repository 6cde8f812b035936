package agent_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/server"
)

func client(t testing.TB, addr string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: addr, Transport: &http.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDevAgentLockCycle drives a dev agent with Consul's own client: an
// empty-body session create binds to the agent's node (S2, S47), and the
// lock cycle answers as in Consul.
func TestDevAgentLockCycle(t *testing.T) {
	a := agenttest.StartDevAgent(t, nil)
	c := client(t, a.HTTPAddr())
	sid, _, err := c.Session().CreateNoChecks(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sid2, _, err := c.Session().Create(&api.SessionEntry{}, nil)
	if err != nil {
		t.Fatalf("empty-body create: %v", err)
	}
	info, _, err := c.Session().Info(sid2, nil)
	if err != nil || info == nil || info.Node != "dev" || len(info.NodeChecks) != 1 || info.NodeChecks[0] != "serfHealth" {
		t.Fatalf("default session: %+v, %v", info, err)
	}
	ok, _, err := c.KV().Acquire(&api.KVPair{Key: "svc/lock", Value: []byte("a"), Session: sid}, nil)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	ok, _, err = c.KV().Acquire(&api.KVPair{Key: "svc/lock", Session: sid2}, nil)
	if err != nil || ok {
		t.Fatalf("acquire of a held lock: %v %v", ok, err)
	}
	pair, _, err := c.KV().Get("svc/lock", nil)
	if err != nil || pair == nil || pair.Session != sid || pair.LockIndex != 1 || string(pair.Value) != "a" {
		t.Fatalf("get: %+v %v", pair, err)
	}
	ok, _, err = c.KV().Release(&api.KVPair{Key: "svc/lock", Session: sid}, nil)
	if err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
}

// TestClusterForwardsAndFailsOver runs three agents over loopback TCP:
// writes sent to a follower are forwarded to the leader; after the leader
// stops, the survivors elect a new one and the lock and data remain.
func TestClusterForwardsAndFailsOver(t *testing.T) {
	cl := agenttest.StartCluster(t, 3, agenttest.ClusterOptions{})
	lead, follower := cl.Leader(), cl.Follower()
	if lead == nil || follower == nil {
		t.Fatal("no leader")
	}
	fc := client(t, follower.HTTPAddr())
	sid, _, err := fc.Session().Create(&api.SessionEntry{TTL: "10s"}, nil)
	if err != nil {
		t.Fatalf("create via follower: %v", err)
	}
	ok, _, err := fc.KV().Acquire(&api.KVPair{Key: "lock", Session: sid}, nil)
	if err != nil || !ok {
		t.Fatalf("acquire via follower: %v %v", ok, err)
	}
	if _, err := fc.KV().Put(&api.KVPair{Key: "data", Value: []byte("kept")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := lead.Shutdown(); err != nil {
		t.Fatal(err)
	}
	var pair *api.KVPair
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The default (leader) read fails until a new leader is known.
		pair, _, err = fc.KV().Get("lock", nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader after failover: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pair == nil || pair.Session != sid {
		t.Fatalf("lock after failover: %+v", pair)
	}
	if _, _, err := fc.Session().Renew(sid, nil); err != nil {
		t.Fatalf("renew after failover: %v", err)
	}
	data, _, err := fc.KV().Get("data", nil)
	if err != nil || data == nil || string(data.Value) != "kept" {
		t.Fatalf("data after failover: %+v %v", data, err)
	}
}

func TestAgentNeedsAnAddress(t *testing.T) {
	_, err := agent.New(agent.Config{})
	if err == nil || !strings.Contains(err.Error(), "no Listener and no Server.HTTPAddr") {
		t.Fatalf("agent without listener or address: %v", err)
	}
	// A server that cannot start leaves no listener behind.
	_, err = agent.New(agent.Config{Server: server.Config{HTTPAddr: "127.0.0.1:0", Dev: true}})
	if err == nil || !strings.Contains(err.Error(), "NodeName is required") {
		t.Fatalf("agent without node name: %v", err)
	}
}

// TestBlockingReadThroughFollower: a blocking read sent to a follower is
// forwarded over the server port and parks on the leader until a write
// wakes it; a session created through the follower belongs to the
// follower's node, which the follower named over that port (S2).
func TestBlockingReadThroughFollower(t *testing.T) {
	cl := agenttest.StartCluster(t, 3, agenttest.ClusterOptions{})
	lead, follower := cl.Leader(), cl.Follower()
	if lead == nil || follower == nil {
		t.Fatal("no leader")
	}
	fc, lc := client(t, follower.HTTPAddr()), client(t, lead.HTTPAddr())
	if _, err := lc.KV().Put(&api.KVPair{Key: "k", Value: []byte("1")}, nil); err != nil {
		t.Fatal(err)
	}
	_, meta, err := fc.KV().Get("k", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *api.KVPair, 1)
	go func() {
		p, _, err := fc.KV().Get("k", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		if err != nil {
			t.Errorf("blocking read: %v", err)
		}
		got <- p
	}()
	// The read parks until the write lands, whenever that is; the
	// write only has to come after the read was sent, which a short
	// pause makes likely and which the answer shows either way.
	time.Sleep(100 * time.Millisecond)
	if _, err := lc.KV().Put(&api.KVPair{Key: "k", Value: []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p == nil || string(p.Value) != "2" {
		t.Fatalf("blocking read through the follower answered %+v", p)
	}
	sid, _, err := fc.Session().Create(&api.SessionEntry{TTL: "10s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := lc.Session().Info(sid, nil)
	if err != nil || se == nil || se.Node != follower.Server().NodeName() {
		t.Fatalf("session created through %s: %+v %v", follower.Server().NodeName(), se, err)
	}
}
