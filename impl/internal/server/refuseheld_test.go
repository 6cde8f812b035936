package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// TestHeldKeyRefusalNeedsConfirmedLeadership: a leader cut off from the
// others, before it notices, must not refuse an acquire of a held key from
// its own state (S29): a successor may already have released the key. The
// acquire waits for leadership to be confirmed, which cannot happen, and
// fails instead of answering false.
func TestHeldKeyRefusalNeedsConfirmedLeadership(t *testing.T) {
	c := newTestCluster(t, 3)
	c.waitRegistered()
	lead := c.leader()
	node := c.nodes[lead].name
	holder := c.apply(model.Command{CreateSession: &model.CreateSession{Node: node}}).SessionID
	waiter := c.apply(model.Command{CreateSession: &model.CreateSession{Node: node}}).SessionID
	if !c.apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: holder}}).OK {
		t.Fatal("first acquire failed")
	}
	acquire := model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: waiter}}
	if res, err := c.nodes[lead].srv.Apply(context.Background(), acquire); err != nil || res.OK {
		t.Fatalf("acquire of a held key on a connected leader: %+v, %v; want a refusal", res, err)
	}

	// raft's VerifyLeader counts a heartbeat already in flight, so wait
	// until a heartbeat to each follower has failed: each follower's
	// heartbeats are sent one at a time, so none from before the cut is
	// still out. The leader keeps its role until its lease runs out.
	failed := make(chan raft.Observation, 16)
	obs := raft.NewObserver(failed, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.FailedHeartbeatObservation)
		return ok
	})
	c.nodes[lead].srv.raft.RegisterObserver(obs)
	defer c.nodes[lead].srv.raft.DeregisterObserver(obs)
	for _, o := range c.nodes {
		if o != c.nodes[lead] {
			c.nodes[lead].trans.Disconnect(raft.ServerAddress(o.name))
			o.trans.Disconnect(raft.ServerAddress(node))
		}
	}
	cut := map[raft.ServerID]bool{}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	// A leader that steps down first stops sending heartbeats; it then
	// refuses nothing at all, which the check below accepts too.
	for len(cut) < len(c.nodes)-1 && c.nodes[lead].srv.raft.State() == raft.Leader {
		select {
		case o := <-failed:
			cut[o.Data.(raft.FailedHeartbeatObservation).PeerID] = true
		case <-tick.C:
		}
	}
	res, err := c.nodes[lead].srv.Apply(context.Background(), acquire)
	if err == nil {
		t.Fatalf("a leader cut off from every follower refused from its own state: %+v", res)
	}
}
