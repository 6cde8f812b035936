package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// fastSync makes anti-entropy run its full sync every few milliseconds with
// no random part, so a test sees many periods quickly.
func fastSync(cfg *local.Config) {
	cfg.Sync.Interval = 20 * time.Millisecond
	cfg.Sync.RetryInterval = 20 * time.Millisecond
	cfg.Sync.Stagger = func(time.Duration) time.Duration { return 0 }
	cfg.Stagger = func(time.Duration) time.Duration { return 0 }
}

// countingRT counts the anti-entropy requests an agent sends: catalog
// writes and the full sync's reads of its node's services.
type countingRT struct {
	next          rpc.Forwarder
	writes, reads atomic.Int64
	mu            sync.Mutex
	bodies        []string
}

func (c *countingRT) Forward(ctx context.Context, addr string, r *rpc.Request) (*rpc.Response, error) {
	switch {
	case r.Method == http.MethodPut && (r.URI == "/v1/catalog/register" || r.URI == "/v1/catalog/deregister"):
		c.writes.Add(1)
		what := r.URI
		if strings.Contains(string(r.Body), `"NodeMeta"`) {
			what += " (node record)"
		}
		c.mu.Lock()
		c.bodies = append(c.bodies, what)
		c.mu.Unlock()
	case strings.HasPrefix(r.URI, "/v1/catalog/node-services/"):
		c.reads.Add(1)
	}
	return c.next.Forward(ctx, addr, r)
}

// waitFullSyncs waits until n more full syncs have read the catalog.
func (c *countingRT) waitFullSyncs(t *testing.T, n int64) {
	t.Helper()
	from := c.reads.Load()
	eventually(t, "full syncs ran", func() error {
		if got := c.reads.Load() - from; got < n {
			return errorf("%d full syncs so far", got)
		}
		return nil
	})
}

func transport(t *testing.T) rpc.Forwarder {
	p := rpc.NewPool(rpc.PoolConfig{})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestAntiEntropyIsQuietWhenNothingChanges (S61, S63): an agent with
// nothing registered writes its node record once and nothing more however
// many full syncs run, and one with a service and a TTL check writes once
// more, when it registers them, and never after; the catalog indexes of its node do not move, so the leader's
// reconcile of the node and anti-entropy agree. Shown for a server agent and
// a client agent.
func TestAntiEntropyIsQuietWhenNothingChanges(t *testing.T) {
	srvRT := &countingRT{next: transport(t)}
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.Forward = srvRT
		fastSync(&c.Local)
	})
	cliRT := &countingRT{next: transport(t)}
	cli := agenttest.StartClientWith(t, "client-1", srv, func(c *agent.ClientConfig) {
		c.Forward = cliRT
		fastSync(&c.Local)
	})
	direct := client(t, srv.HTTPAddr())
	eventually(t, "the client's node is registered", func() error {
		n, _, err := direct.Catalog().Node("client-1", nil)
		if err != nil || n == nil {
			return errorf("node %+v %v", n, err)
		}
		return nil
	})
	for _, tc := range []struct {
		node string
		rt   *countingRT
		api  *api.Client
	}{{"dev", srvRT, client(t, srv.HTTPAddr())}, {"client-1", cliRT, client(t, cli.HTTPAddr())}} {
		tc.rt.waitFullSyncs(t, 5)
		_, before, err := direct.Health().Node(tc.node, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := tc.rt.writes.Load(); w != 1 || tc.rt.bodies[0] != "/v1/catalog/register (node record)" {
			t.Fatalf("%s: idle agent made %d catalog writes, want its node record alone: %v", tc.node, w, tc.rt.bodies)
		}
		err = tc.api.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: "web", Name: "web", Port: 80,
			Tags: []string{"a"}, EnableTagOverride: true, Weights: &api.AgentWeights{Passing: 3, Warning: 2},
			Check: &api.AgentServiceCheck{TTL: "1h", Status: api.HealthPassing}})
		if err != nil {
			t.Fatal(err)
		}
		if w := tc.rt.writes.Load(); w != 2 {
			t.Fatalf("%s: registering a service with its check took %d writes, want 1", tc.node, w-1)
		}
		tc.rt.waitFullSyncs(t, 5)
		if w := tc.rt.writes.Load(); w != 2 {
			t.Fatalf("%s: full syncs after the registration wrote %d times: %v", tc.node, w-2, tc.rt.bodies)
		}
		checks, meta, err := direct.Health().Node(tc.node, nil)
		if err != nil || len(checks) != 2 {
			t.Fatalf("%s: catalog checks %+v %v", tc.node, checks, err)
		}
		tc.rt.waitFullSyncs(t, 5)
		if _, again, _ := direct.Health().Node(tc.node, nil); again.LastIndex != meta.LastIndex || meta.LastIndex <= before.LastIndex {
			t.Fatalf("%s: index moved while idle: %d → %d (before the service %d)", tc.node, meta.LastIndex, again.LastIndex, before.LastIndex)
		}
	}
}

// TestSessionBoundRightAfterAPass (issue 35, S61, S12): a TTL check
// registered critical is in the catalog passing when its pass returns, so
// a session bound to it is created at once, and critical when its fail
// returns, so the session is gone by then; through a server agent and a
// client agent alike, as with Consul, whose agent syncs before it answers.
func TestSessionBoundRightAfterAPass(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	cli := agenttest.StartClient(t, "client-1", srv)
	for _, tc := range []struct {
		node string
		api  *api.Client
	}{{"dev", client(t, srv.HTTPAddr())}, {"client-1", client(t, cli.HTTPAddr())}} {
		eventually(t, tc.node+"'s serfHealth is in the catalog", func() error {
			cs, _, err := tc.api.Health().Node(tc.node, nil)
			if err != nil {
				return err
			}
			for _, c := range cs {
				if c.CheckID == "serfHealth" && c.Status == api.HealthPassing {
					return nil
				}
			}
			return errorf("checks %+v", cs)
		})
		agent := tc.api.Agent()
		if err := agent.CheckRegister(&api.AgentCheckRegistration{ID: "app", Name: "app",
			AgentServiceCheck: api.AgentServiceCheck{TTL: "1h"}}); err != nil {
			t.Fatal(err)
		}
		if err := agent.PassTTL("app", "ready"); err != nil {
			t.Fatal(err)
		}
		sid, _, err := tc.api.Session().Create(&api.SessionEntry{NodeChecks: []string{"serfHealth", "app"}}, nil)
		if err != nil {
			t.Fatalf("%s: session bound to a check right after its pass: %v", tc.node, err)
		}
		if err := agent.FailTTL("app", "down"); err != nil {
			t.Fatal(err)
		}
		if s, _, err := tc.api.Session().Info(sid, nil); err != nil || s != nil {
			t.Fatalf("%s: session bound to a check still there after its fail returned: %+v %v", tc.node, s, err)
		}
	}
}

// sessionGone waits until a session no longer exists.
func sessionGone(t *testing.T, c *api.Client, id, why string) {
	t.Helper()
	eventually(t, why, func() error {
		s, _, err := c.Session().Info(id, nil)
		if err != nil || s != nil {
			return errorf("session %+v %v", s, err)
		}
		return nil
	})
}

// createBound creates a session through c bound to serfHealth and the
// named checks of the agent's node, once the catalog has them passing.
func createBound(t *testing.T, c *api.Client, node string, nodeChecks []string, svcChecks []string) string {
	t.Helper()
	want := append(append([]string{}, nodeChecks...), svcChecks...)
	eventually(t, "the checks reach the catalog passing", func() error {
		cs, _, err := c.Health().Node(node, nil)
		if err != nil {
			return err
		}
		have := map[string]string{}
		for _, ch := range cs {
			have[ch.CheckID] = ch.Status
		}
		for _, id := range want {
			if have[id] != api.HealthPassing {
				return errorf("check %s is %q", id, have[id])
			}
		}
		return nil
	})
	entry := &api.SessionEntry{Node: node, NodeChecks: append([]string{"serfHealth"}, nodeChecks...), LockDelay: time.Millisecond}
	for _, id := range svcChecks {
		entry.ServiceChecks = append(entry.ServiceChecks, api.ServiceCheck{ID: id})
	}
	sid, _, err := c.Session().Create(entry, nil)
	if err != nil {
		t.Fatalf("create bound session: %v", err)
	}
	return sid
}

// TestTTLCheckExpiryInvalidatesBoundSession (S61, S12): a TTL check that its
// application stops passing goes critical on its agent by itself, reaches
// the catalog through anti-entropy, and ends the sessions bound to it; a
// session bound to a service's check ends when the service is deregistered.
func TestTTLCheckExpiryInvalidatesBoundSession(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	cli := agenttest.StartClient(t, "client-1", srv)
	c := client(t, cli.HTTPAddr())

	if err := c.Agent().CheckRegister(&api.AgentCheckRegistration{ID: "app", Name: "app",
		AgentServiceCheck: api.AgentServiceCheck{TTL: "1s", Status: api.HealthPassing}}); err != nil {
		t.Fatal(err)
	}
	sid := createBound(t, c, "client-1", []string{"app"}, nil)
	if _, _, err := c.KV().Acquire(&api.KVPair{Key: "locks/ttl", Session: sid}, nil); err != nil {
		t.Fatal(err)
	}
	sessionGone(t, c, sid, "the TTL check expires and ends its session")
	checks, err := c.Agent().Checks()
	if err != nil || checks["app"] == nil || checks["app"].Status != api.HealthCritical ||
		!strings.HasPrefix(checks["app"].Output, "TTL expired") {
		t.Fatalf("agent's view of the expired check: %+v %v", checks["app"], err)
	}

	if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: "db", Name: "db",
		Check: &api.AgentServiceCheck{TTL: "1h", Status: api.HealthPassing}}); err != nil {
		t.Fatal(err)
	}
	sid2 := createBound(t, c, "client-1", nil, []string{"service:db"})
	if err := c.Agent().ServiceDeregister("db"); err != nil {
		t.Fatal(err)
	}
	sessionGone(t, c, sid2, "the service's deregistration ends the session bound to its check")
}

// TestHTTPCheckFailureInvalidatesBoundSession (S61, S12): an HTTP check the
// agent runs goes critical when its target starts failing, and the session
// bound to it ends.
func TestHTTPCheckFailureInvalidatesBoundSession(t *testing.T) {
	var failing atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer target.Close()
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.Local.Stagger = func(time.Duration) time.Duration { return 0 }
	})
	c := client(t, srv.HTTPAddr())
	if err := c.Agent().CheckRegister(&api.AgentCheckRegistration{ID: "web", Name: "web",
		AgentServiceCheck: api.AgentServiceCheck{HTTP: target.URL, Interval: "1s"}}); err != nil {
		t.Fatal(err)
	}
	sid := createBound(t, c, "dev", []string{"web"}, nil)
	failing.Store(true)
	sessionGone(t, c, sid, "the failing HTTP check ends its session")
	checks, _, err := c.Health().Node("dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range checks {
		if ch.CheckID == "web" && (ch.Status != api.HealthCritical || !strings.Contains(ch.Output, "503")) {
			t.Fatalf("catalog copy of the failing check: %+v", ch)
		}
	}
}

// TestMaintenanceModeAddsCriticalCheck (S61): node maintenance puts the
// critical "_node_maintenance" check in the catalog, so no session can be
// bound to it, while sessions bound to serfHealth live on, as in Consul;
// service maintenance adds "_service_maintenance:<id>"; disabling removes
// both.
func TestMaintenanceModeAddsCriticalCheck(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	cli := agenttest.StartClient(t, "client-1", srv)
	c := client(t, cli.HTTPAddr())
	sid := createBound(t, c, "client-1", nil, nil)
	if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: "db", Name: "db"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent().EnableNodeMaintenance("upgrading"); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent().EnableServiceMaintenance("db", ""); err != nil {
		t.Fatal(err)
	}
	cs, _, err := c.Health().Node("client-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]*api.HealthCheck{}
	for _, ch := range cs {
		have[ch.CheckID] = ch
	}
	nm, sm := have["_node_maintenance"], have["_service_maintenance:db"]
	if nm == nil || nm.Status != api.HealthCritical || nm.Notes != "upgrading" || nm.Type != "maintenance" ||
		sm == nil || sm.Status != api.HealthCritical || sm.ServiceID != "db" {
		t.Fatalf("maintenance checks in the catalog: %+v %+v", nm, sm)
	}
	_, _, err = c.Session().Create(&api.SessionEntry{NodeChecks: []string{"serfHealth", "_node_maintenance"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "Check '_node_maintenance' is in critical state") {
		t.Fatalf("session bound to the maintenance check: %v", err)
	}
	if s, _, err := c.Session().Info(sid, nil); err != nil || s == nil {
		t.Fatalf("the serfHealth session should survive maintenance: %+v %v", s, err)
	}
	if err := c.Agent().DisableNodeMaintenance(); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent().DisableServiceMaintenance("db"); err != nil {
		t.Fatal(err)
	}
	cs, _, err = c.Health().Node("client-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range cs {
		if ch.Type == "maintenance" {
			t.Fatalf("maintenance check left after disabling: %+v", ch)
		}
	}
}

// TestFollowerAgentChecksReachTheLeader (S61, S12): a server agent that
// does not lead syncs its own checks through its API, which forwards the
// writes to the leader, and its TTL check's expiry ends the session bound to
// it like any other check's.
func TestFollowerAgentChecksReachTheLeader(t *testing.T) {
	c := agenttest.StartCluster(t, 3, agenttest.ClusterOptions{})
	leader := c.Leader()
	var follower *agent.Agent
	for _, a := range c.Agents {
		if a != leader {
			follower = a
			break
		}
	}
	if leader == nil || follower == nil {
		t.Fatal("no leader and follower")
	}
	fc := client(t, follower.HTTPAddr())
	node := follower.Server().NodeName()
	if err := fc.Agent().CheckRegister(&api.AgentCheckRegistration{ID: "app", Name: "app",
		AgentServiceCheck: api.AgentServiceCheck{TTL: "1s", Status: api.HealthPassing}}); err != nil {
		t.Fatal(err)
	}
	sid := createBound(t, client(t, leader.HTTPAddr()), node, []string{"app"}, nil)
	sessionGone(t, fc, sid, "the follower's expired TTL check ends its session")
	n, _, err := fc.Catalog().Node(node, nil)
	// The address the leader's reconcile records: the agent's gossip IP.
	if err != nil || n == nil || n.Node.Address != "127.0.0.1" {
		t.Fatalf("the follower's node as anti-entropy left it: %+v %v (want address 127.0.0.1)", n, err)
	}
}
