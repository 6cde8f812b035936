package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// testCluster is n in-process servers on raft's in-memory transport, sharing
// one fake clock and one in-memory gossip pool (fakePool; nil: no gossip): a stopped server
// is announced failed, a started one alive, and the leader reconciles that
// into the catalog. Requests a server forwards to another's server port go
// through catalogRouter, a stand-in for the HTTP API there (httpapi imports
// server, so server's own tests cannot use it).
type testCluster struct {
	t      *testing.T
	clock  *clocktest.Manual
	router *catalogRouter
	pool   *fakePool
	nodes  []*testNode
}

type testNode struct {
	name  string
	srv   *Server // nil while stopped
	trans *raft.InmemTransport
	logs  *raft.InmemStore
	snaps *raft.InmemSnapshotStore
}

func fastRaft(c *raft.Config) {
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
}

func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return newTestClusterOf(t, n, newFakeMembership().fakePool)
}

// newTestClusterOf is newTestCluster with the given pool; nil runs the
// servers without gossip, so each registers itself through the leader.
func newTestClusterOf(t *testing.T, n int, pool *fakePool) *testCluster {
	t.Helper()
	c := &testCluster{t: t, clock: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), router: &catalogRouter{servers: map[string]*Server{}},
		pool: pool}
	var peers []Peer
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		peers = append(peers, Peer{Name: name, RaftAddr: name})
		c.nodes = append(c.nodes, &testNode{name: name, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()})
	}
	for i := range c.nodes {
		c.start(i, peers)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

// start (re)starts node i on its stores with a fresh transport.
func (c *testCluster) start(i int, peers []Peer) {
	c.t.Helper()
	nd := c.nodes[i]
	_, nd.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(nd.name), 100*time.Millisecond)
	for _, o := range c.nodes {
		if o != nd && o.srv != nil {
			nd.trans.Connect(raft.ServerAddress(o.name), o.trans)
			o.trans.Connect(raft.ServerAddress(nd.name), nd.trans)
		}
	}
	cfg := Config{
		NodeName: nd.name, HTTPAddr: nd.name + ".http", Clock: c.clock,
		Transport: nd.trans, LogStore: nd.logs, StableStore: nd.logs, SnapshotStore: nd.snaps,
		tuneRaft: fastRaft, Peers: peers, Forward: c.router,
		ACL: ACLConfig{AgentToken: func() string { return "agent-of-" + nd.name }},
	}
	if c.pool != nil {
		cfg.Membership = c.pool.view()
	}
	srv, err := NewServer(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", nd.name, err)
	}
	nd.srv = srv
	c.router.set(nd.name, srv)
	c.announce(nd.name, reconcile.Alive)
}

// announce tells every server's pool that node's gossip status changed.
func (c *testCluster) announce(node string, status reconcile.Status) {
	if c.pool == nil {
		return
	}
	m := reconcile.Member{Name: node, Address: node + ".http", Status: status}
	c.pool.set(m, false, m)
}

// stop shuts node i down and cuts it off, as a crash would.
func (c *testCluster) stop(i int) {
	nd := c.nodes[i]
	if nd.srv == nil {
		return
	}
	for _, o := range c.nodes {
		if o != nd && o.trans != nil {
			o.trans.Disconnect(raft.ServerAddress(nd.name))
		}
	}
	c.router.set(nd.name, nil)
	if err := nd.srv.Shutdown(); err != nil {
		c.t.Errorf("shutdown %s: %v", nd.name, err)
	}
	nd.srv = nil
	c.announce(nd.name, reconcile.Failed)
}

// waitFor polls cond (real time) until it holds; the wait is for raft's own
// elections and replication, which run on real time.
func (c *testCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leader waits for a running node that leads with its term established.
func (c *testCluster) leader() int {
	c.t.Helper()
	idx := -1
	c.waitFor("an established leader", func() bool {
		for i, nd := range c.nodes {
			if nd.srv == nil {
				continue
			}
			if t := nd.srv.currentTerm(); t != nil && nd.srv.raft.State() == raft.Leader {
				select {
				case <-t.ready:
					idx = i
					return true
				default:
				}
			}
		}
		return false
	})
	return idx
}

func (c *testCluster) waitRegistered() {
	c.t.Helper()
	for _, nd := range c.nodes {
		if nd.srv == nil {
			continue
		}
		select {
		case <-nd.srv.Registered():
		case <-time.After(10 * time.Second):
			c.t.Fatalf("%s never saw itself registered", nd.name)
		}
	}
}

// apply runs cmd on the current leader and fails the test on any error.
func (c *testCluster) apply(cmd model.Command) model.Result {
	c.t.Helper()
	res, err := c.nodes[c.leader()].srv.Apply(context.Background(), cmd)
	if err != nil {
		c.t.Fatalf("apply %+v: %v", cmd, err)
	}
	if res.Err != nil {
		c.t.Fatalf("apply %+v: rejected: %v", cmd, res.Err)
	}
	return res
}

// read runs fn on node i's applied state.
func (c *testCluster) read(i int, fn func(*model.State)) { c.nodes[i].srv.Read(fn) }

// catalogRouter answers PUT /v1/catalog/register by applying it on the
// server registered under the request's host; every other request fails.
type catalogRouter struct {
	mu      sync.Mutex
	servers map[string]*Server
	calls   int
	// tokens are the origin node and token of every register sent.
	tokens [][2]string
}

func (r *catalogRouter) set(addr string, s *Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s == nil {
		delete(r.servers, addr)
	} else {
		r.servers[addr] = s
	}
}

func (r *catalogRouter) Forward(ctx context.Context, addr string, req *rpc.Request) (*rpc.Response, error) {
	r.mu.Lock()
	srv := r.servers[addr]
	r.calls++
	r.tokens = append(r.tokens, [2]string{req.Origin.Node, req.Origin.Token})
	r.mu.Unlock()
	if srv == nil {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	if req.Method != http.MethodPut || req.URI != "/v1/catalog/register" {
		return reply(http.StatusNotFound, "no such endpoint"), nil
	}
	var body catalogwire.Register
	if err := json.Unmarshal(req.Body, &body); err != nil || body.Check == nil {
		return reply(http.StatusBadRequest, fmt.Sprintf("bad body: %v", err)), nil
	}
	reg := model.Register{Node: body.Node, Address: body.Address, Checks: []model.CheckSpec{
		{CheckID: body.Check.CheckID, Name: body.Check.Name, Status: body.Check.Status}}}
	res, err := srv.Apply(ctx, model.Command{Register: &reg})
	switch {
	case err != nil:
		return reply(http.StatusInternalServerError, err.Error()), nil
	case res.Err != nil:
		return reply(http.StatusBadRequest, res.Err.Error()), nil
	}
	return reply(http.StatusOK, "true"), nil
}

func reply(code int, body string) *rpc.Response {
	return &rpc.Response{Status: code, Header: http.Header{}, Body: []byte(body)}
}
