package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/internal/testlog"
)

// TestMembershipLogsNoFailureThatDidNotHappen: a lone server expecting 1
// bootstraps and tells the pool, then adds a joining server as a voter and
// removes it when it leaves. Every step succeeds, so none of the warnings
// an operator reads as a failed bootstrap or voter change may appear: a
// server that inverts its error checks tells operators the opposite of
// what happened.
func TestMembershipLogsNoFailureThatDidNotHappen(t *testing.T) {
	logs := &testlog.Buffer{}
	g := &gossipCluster{t: t, pool: newFakeMembership().fakePool, nodes: map[string]*testNode{}}
	start := func(name string, expect int) *Server {
		nd := &testNode{name: name, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		_, nd.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(name), 100*time.Millisecond)
		for _, o := range g.nodes {
			nd.trans.Connect(raft.ServerAddress(o.name), o.trans)
			o.trans.Connect(raft.ServerAddress(name), nd.trans)
		}
		srv, err := NewServer(Config{NodeName: name, HTTPAddr: name + ".http", Transport: nd.trans,
			LogStore: nd.logs, StableStore: nd.logs, SnapshotStore: nd.snaps, tuneRaft: fastRaft,
			Membership: g.pool.view(), BootstrapExpect: expect,
			Logger: hclog.New(&hclog.LoggerOptions{Name: name, Output: logs, Level: hclog.Warn})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
		nd.srv = srv
		g.nodes[name] = nd
		m := reconcile.Member{Name: name, Address: name + ".http", Status: reconcile.Alive, Server: true, RaftAddr: name, Expect: expect}
		g.pool.set(m, false, m)
		return srv
	}
	s1 := start("s1", 1)
	waitUntil(t, "s1 bootstraps alone and tells the pool", func() bool {
		g.pool.mu.Lock()
		told := g.pool.bootstrapped
		g.pool.mu.Unlock()
		return told && s1.raft.State() == raft.Leader
	})
	start("s2", 0)
	waitUntil(t, "the leader adds s2 as a voter", func() bool { return slices.Contains(g.voters(s1), "s2") })
	left := reconcile.Member{Name: "s2", Address: "s2.http", Status: reconcile.Left, Server: true, RaftAddr: "s2"}
	g.pool.set(left, false, left)
	waitUntil(t, "the leader removes s2, which left", func() bool { return !slices.Contains(g.voters(s1), "s2") })
	for _, failure := range []string{
		"bootstrap failed",
		"telling the pool this server is in a cluster failed",
		"adding a raft voter failed",
		"removing a raft server failed",
	} {
		if strings.Contains(logs.String(), failure) {
			t.Errorf("logged %q though the step succeeded:\n%s", failure, logs.String())
		}
	}
}
