package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// A caller that goes away after its write was proposed must still be told
// the write's real outcome: the entry commits whatever the caller does, so an
// error here would invite a retry that applies it twice.
func TestApplyOutlivesCallerCancelledAfterPropose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := startDev(t, Config{
		// The state machine runs only for a committed entry, so cancelling
		// here is "after propose" by construction.
		Apply: func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
			if cmd.KV != nil && cmd.KV.Key == "left-behind" {
				cancel()
			}
			return st, st.Apply(index, cmd)
		},
	})
	res, err := s.Apply(ctx, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "left-behind", Value: []byte("v")}})
	if err != nil || res.Err != nil {
		t.Fatalf("apply with the caller gone after propose: %v / %v; want the committed result", err, res.Err)
	}
	if ctx.Err() == nil {
		t.Fatal("the test's hook never cancelled the caller's context")
	}
	s.Read(func(st *model.State) {
		if e, ok := st.Get("left-behind"); !ok || e.ModifyIndex != res.Index {
			t.Fatalf("key %+v (present %v), want it written at %d", e, ok, res.Index)
		}
	})
}

// TestTxnLockAfterLockDelayPasses (S22, S24): once a key's lock-delay has
// passed, a txn lock on it succeeds. The leader stamps each txn lock op
// with the index its lock-delay check saw; an op left unstamped would be
// refused by the state machine for the invalidation that armed the delay.
func TestTxnLockAfterLockDelayPasses(t *testing.T) {
	s, clock := startDev(t, Config{})
	node := s.NodeName()
	first := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: node, Checks: []string{}, LockDelay: time.Second}}).SessionID
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: first}})
	mustApply(t, s, model.Command{DestroySession: &model.DestroySession{ID: first}})
	clock.Advance(2 * time.Second)
	second := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: node, Checks: []string{}}}).SessionID
	res := mustApply(t, s, model.Command{Txn: model.KVTxn(
		model.KVOp{Verb: model.KVSet, Key: "other", Value: []byte("v")},
		model.KVOp{Verb: model.KVLock, Key: "k", Session: second},
	)})
	if res.Failed() || len(res.TxnErrors) > 0 {
		t.Fatalf("txn lock after the lock-delay: %+v", res)
	}
	if len(res.TxnResults) != 2 || res.TxnResults[1].KV.Session != second {
		t.Fatalf("txn results %+v, want k held by %s", res.TxnResults, second)
	}
}

// endsAfterFirstWait is a context that ends the second time anyone asks
// for its Done channel: after the leader-ready wait, before the quorum
// round. It makes that ordering deterministic.
type endsAfterFirstWait struct {
	context.Context
	calls atomic.Int32
	open  chan struct{}
	ended chan struct{}
}

func newEndsAfterFirstWait() *endsAfterFirstWait {
	c := &endsAfterFirstWait{Context: context.Background(), open: make(chan struct{}), ended: make(chan struct{})}
	close(c.ended)
	return c
}

func (c *endsAfterFirstWait) Done() <-chan struct{} {
	if c.calls.Add(1) >= 2 {
		return c.ended
	}
	return c.open
}

func (c *endsAfterFirstWait) Err() error {
	if c.calls.Load() >= 2 {
		return context.Canceled
	}
	return nil
}

// TestVerifyLeaderHonoursItsCaller: a ?consistent read's quorum round
// gives up when the caller leaves, and says so with the caller's reason.
// The leader is cut off from its followers so the round cannot finish on
// its own first.
func TestVerifyLeaderHonoursItsCaller(t *testing.T) {
	c := newTestCluster(t, 3)
	c.waitRegistered()
	lead := c.leader()
	srv := c.nodes[lead].srv
	for i, nd := range c.nodes {
		if i != lead {
			nd.trans.Disconnect(raft.ServerAddress(c.nodes[lead].name))
			c.nodes[lead].trans.Disconnect(raft.ServerAddress(nd.name))
		}
	}
	err := srv.VerifyLeader(newEndsAfterFirstWait())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("VerifyLeader with the caller gone: %v, want the caller's context.Canceled", err)
	}
}
