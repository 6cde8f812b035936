package server

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestRaftRandPatched: the build uses tenure's patched raft (go.mod's
// replace to third_party/raft, DESIGN.md "Patched dependencies"), and
// Config.RaftRand reaches it: every server asks it for its own uses, and
// the leader for each follower's replication uses of its term. Were the
// replace dropped, this would not compile: upstream has no
// raft.Config.Rand or raft.Rand* names.
func TestRaftRandPatched(t *testing.T) {
	var mu sync.Mutex
	uses := map[string][]string{}
	record := func(node string) func(string) *rand.Rand {
		return func(use string) *rand.Rand {
			mu.Lock()
			defer mu.Unlock()
			uses[node] = append(uses[node], use)
			return rand.New(rand.NewSource(1))
		}
	}
	c := &testCluster{t: t, router: &catalogRouter{servers: map[string]*Server{}}}
	var peers []Peer
	for i := range 2 {
		name := fmt.Sprintf("n%d", i+1)
		peers = append(peers, Peer{Name: name, RaftAddr: name})
		c.nodes = append(c.nodes, &testNode{name: name, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()})
	}
	for _, nd := range c.nodes {
		_, nd.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(nd.name), 100*time.Millisecond)
	}
	c.nodes[0].trans.Connect("n2", c.nodes[1].trans)
	c.nodes[1].trans.Connect("n1", c.nodes[0].trans)
	for _, nd := range c.nodes {
		srv, err := NewServer(Config{NodeName: nd.name, HTTPAddr: nd.name + ".http",
			Transport: nd.trans, LogStore: nd.logs, StableStore: nd.logs, SnapshotStore: nd.snaps,
			tuneRaft: fastRaft, Peers: peers, Forward: c.router, RaftRand: record(nd.name)})
		if err != nil {
			t.Fatal(err)
		}
		nd.srv = srv
		c.router.set(nd.name, srv)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	lead := c.nodes[c.leader()]
	follower := c.nodes[0].name
	if lead == c.nodes[0] {
		follower = c.nodes[1].name
	}
	term := lead.srv.raft.CurrentTerm()
	mu.Lock()
	defer mu.Unlock()
	for _, nd := range c.nodes {
		for _, use := range []string{raft.RandFollower, raft.RandCandidate, raft.RandSnapshot} {
			if !slices.Contains(uses[nd.name], use) {
				t.Errorf("%s never asked RaftRand for %q (asked: %v)", nd.name, use, uses[nd.name])
			}
		}
	}
	for _, use := range []string{raft.RandReplicate, raft.RandHeartbeat} {
		want := fmt.Sprintf("%s/%s/%d", use, follower, term)
		if !slices.Contains(uses[lead.name], want) {
			t.Errorf("leader %s never asked RaftRand for %q (asked: %s)", lead.name, want, strings.Join(uses[lead.name], ", "))
		}
	}
}
