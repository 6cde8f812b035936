package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// TestFailoverKeepsTTLSessionAndLock kills the leader while a TTL session on
// a surviving node holds a lock. The new leader re-arms the session's timer
// with a full TTL × multiplier (S21), so the session and its lock outlive
// more than a TTL after the failover even though no renew comes (S18);
// every acknowledged write survives; the dead node's serfHealth goes
// critical, invalidating the sessions bound to it (S12, S47); finally the
// TTL session expires through raft, releasing the lock with lock-delay
// (S14, S22).
func TestFailoverKeepsTTLSessionAndLock(t *testing.T) {
	c := newTestCluster(t, 3)
	c.waitRegistered()
	old := c.leader()
	oldName := c.nodes[old].name
	survivor := (old + 1) % 3
	survivorName := c.nodes[survivor].name

	const ttl = 10 * time.Second
	ttlSession := c.apply(model.Command{CreateSession: &model.CreateSession{
		Node: survivorName, Checks: []string{model.SerfHealthCheckID}, TTL: ttl.String(),
		LockDelay: 15 * time.Second, Behavior: model.BehaviorRelease,
	}}).SessionID
	onDead := c.apply(model.Command{CreateSession: &model.CreateSession{
		Node: oldName, Checks: []string{model.SerfHealthCheckID},
	}}).SessionID
	if !c.apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "svc/leader", Value: []byte("me"), Session: ttlSession}}).OK {
		t.Fatal("acquire of svc/leader failed")
	}
	if !c.apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "dead/lock", Session: onDead}}).OK {
		t.Fatal("acquire of dead/lock failed")
	}
	acked := map[string]string{}
	for i := range 20 {
		k, v := fmt.Sprintf("data/%02d", i), fmt.Sprintf("v%d", i)
		c.apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: k, Value: []byte(v)}})
		acked[k] = v
	}
	// apply returns once the leader has applied; the survivor may lag.
	c.waitFor("survivor applied the TTL session", func() bool { return c.nodes[survivor].srv.leader.SessionLive(ttlSession) })
	// 15s of the old leader's 20s deadline pass without a renew.
	c.clock.Advance(15 * time.Second)
	if !c.nodes[survivor].srv.leader.SessionLive(ttlSession) {
		t.Fatal("TTL session expired before TTL × multiplier on a stable leader")
	}

	c.stop(old)
	lead := c.leader()
	srv := c.nodes[lead].srv
	rearmed, ok := srv.leader.TTLDeadline(ttlSession)
	if !ok {
		t.Fatal("new leader did not re-arm the TTL session")
	}
	if want := c.clock.Now().Add(2 * ttl); !rearmed.Equal(want) {
		t.Fatalf("re-armed deadline %v, want now + TTL×2 = %v", rearmed, want)
	}
	// 19s after the failover (34s after create, well past the old 20s
	// deadline, more than TTL after the failover): still alive and holding.
	c.clock.Advance(2*ttl - time.Second)
	c.waitFor("dead node's session invalidated", func() bool { return !srv.leader.SessionLive(onDead) })
	for i, nd := range c.nodes {
		if nd.srv == nil {
			continue
		}
		c.waitFor(nd.name+" applying the invalidation", func() bool { return !nd.srv.leader.SessionLive(onDead) })
		c.read(i, func(st *model.State) {
			if _, ok := st.Session(ttlSession); !ok {
				t.Errorf("%s: TTL session gone %v after failover (TTL %v)", nd.name, 2*ttl-time.Second, ttl)
			}
			if e, _ := st.Get("svc/leader"); e.Session != ttlSession {
				t.Errorf("%s: svc/leader holder %q, want %q", nd.name, e.Session, ttlSession)
			}
			if e, _ := st.Get("dead/lock"); e.Session != "" {
				t.Errorf("%s: dead/lock still held by %q after its node failed", nd.name, e.Session)
			}
			if ch, _ := st.Check(model.CheckKey{Node: oldName, CheckID: model.SerfHealthCheckID}); ch.Status != model.HealthCritical {
				t.Errorf("%s: dead node's serfHealth is %q, want critical", nd.name, ch.Status)
			}
			for k, v := range acked {
				if e, ok := st.Get(k); !ok || string(e.Value) != v {
					t.Errorf("%s: acknowledged write %s=%s lost (got %q, %v)", nd.name, k, v, e.Value, ok)
				}
			}
		})
	}

	// Past the re-armed deadline the session expires through raft.
	c.clock.Advance(time.Second)
	c.waitFor("TTL expiry", func() bool { return !srv.leader.SessionLive(ttlSession) })
	var entry model.KVEntry
	c.read(lead, func(st *model.State) { entry, _ = st.Get("svc/leader") })
	if entry.Session != "" || string(entry.Value) != "me" {
		t.Fatalf("after expiry svc/leader = %+v, want released with value kept", entry)
	}
	other := c.apply(model.Command{CreateSession: &model.CreateSession{Node: survivorName}}).SessionID
	_, err := srv.Apply(context.Background(), model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "svc/leader", Session: other}})
	var lde *leader.LockDelayError
	if !errors.As(err, &lde) || lde.Key != "svc/leader" || lde.Remaining <= 0 || lde.Remaining > 15*time.Second {
		t.Fatalf("acquire during lock-delay: err %v, want *leader.LockDelayError for svc/leader", err)
	}
	c.clock.Advance(15 * time.Second)
	if !c.apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "svc/leader", Session: other}}).OK {
		t.Fatal("acquire after lock-delay failed")
	}
}

// TestRestartedNodeRejoinsPassing restarts a killed follower on its stores:
// the leader marked it critical while it was down; once it is back it is
// registered passing again and its data is intact.
func TestRestartedNodeRejoinsPassing(t *testing.T) {
	c := newTestCluster(t, 3)
	c.waitRegistered()
	lead := c.leader()
	victim := (lead + 1) % 3
	name := c.nodes[victim].name
	c.apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "before", Value: []byte("1")}})
	c.waitFor(name+" replicating", func() bool {
		ok := false
		c.read(victim, func(st *model.State) { _, ok = st.Get("before") })
		return ok
	})
	var peers []Peer
	for _, nd := range c.nodes {
		peers = append(peers, Peer{Name: nd.name, RaftAddr: nd.name})
	}
	c.stop(victim)
	critical := func(i int) bool {
		st := model.HealthPassing
		c.read(i, func(s *model.State) {
			ch, _ := s.Check(model.CheckKey{Node: name, CheckID: model.SerfHealthCheckID})
			st = ch.Status
		})
		return st == model.HealthCritical
	}
	c.waitFor(name+" marked critical", func() bool { return critical(lead) })
	c.apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "during", Value: []byte("2")}})

	c.start(victim, peers)
	c.waitFor(name+" passing again", func() bool {
		return !critical(lead) && c.nodes[victim].srv.registeredHere()
	})
	c.waitFor(name+" catching up", func() bool {
		ok := false
		c.read(victim, func(st *model.State) { _, ok = st.Get("during") })
		return ok
	})
	c.read(victim, func(st *model.State) {
		if e, ok := st.Get("before"); !ok || string(e.Value) != "1" {
			t.Errorf("restarted node lost 'before': %+v", e)
		}
	})
}
