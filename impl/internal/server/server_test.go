package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/model"
)

// seqIDs hands out the given IDs in order (a seeded NewID).
func seqIDs(ids ...string) func() string {
	var mu sync.Mutex
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		id := ids[0]
		if len(ids) > 1 {
			ids = ids[1:]
		}
		return id
	}
}

func startDev(t *testing.T, cfg Config) (*Server, *clocktest.Manual) {
	t.Helper()
	clock := clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg.Dev = true
	cfg.Clock = clock
	if cfg.NodeName == "" {
		cfg.NodeName = "dev"
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:8500"
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-s.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("dev server never registered itself")
	}
	return s, clock
}

func mustApply(t *testing.T, s *Server, cmd model.Command) model.Result {
	t.Helper()
	res, err := s.Apply(context.Background(), cmd)
	if err != nil || res.Err != nil {
		t.Fatalf("apply %+v: %v / %v", cmd, err, res.Err)
	}
	return res
}

func TestDevServerRegistersItselfAndLeads(t *testing.T) {
	s, _ := startDev(t, Config{NodeName: "alpha", HTTPAddr: "127.0.0.1:9999"})
	isLeader, addr, known := s.Leader()
	if !isLeader || !known || addr != "alpha" { // the in-memory transport's address
		t.Fatalf("Leader() = %v %q %v", isLeader, addr, known)
	}
	s.Read(func(st *model.State) {
		n, ok := st.Node("alpha")
		c, _ := st.Check(model.CheckKey{Node: "alpha", CheckID: model.SerfHealthCheckID})
		// The node's address is its IP, as Consul's (here HTTPAddr's host).
		if !ok || n.Address != "127.0.0.1" || c.Status != model.HealthPassing || c.Name != reconcile.CheckName {
			t.Fatalf("self registration: node %+v (%v), check %+v", n, ok, c)
		}
	})
	if s.LastContact() != 0 || s.RaftLeaderAddr() != "alpha" || len(s.Peers()) != 1 {
		t.Fatalf("status: contact %v leader %q peers %v", s.LastContact(), s.RaftLeaderAddr(), s.Peers())
	}
	if err := s.VerifyLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestApplyGivesFreshSessionIDs(t *testing.T) {
	s, _ := startDev(t, Config{NewID: seqIDs("id-1", "id-1", "id-2")})
	cmd := model.Command{CreateSession: &model.CreateSession{Node: "dev"}}
	first := mustApply(t, s, cmd).SessionID
	second := mustApply(t, s, cmd).SessionID
	if first != "id-1" || second != "id-2" {
		t.Fatalf("IDs %q, %q; want id-1 then id-2 (the repeat skipped)", first, second)
	}
	if cmd.CreateSession.ID != "" {
		t.Fatal("Apply modified the caller's command")
	}
}

func TestRenew(t *testing.T) {
	s, clock := startDev(t, Config{})
	id := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "dev", TTL: "10s"}}).SessionID
	d0, ok := s.leader.TTLDeadline(id)
	if !ok || !d0.Equal(clock.Now().Add(20*time.Second)) {
		t.Fatalf("deadline after create %v (%v), want now+20s", d0, ok)
	}
	clock.Advance(15 * time.Second)
	se, err := s.Renew(context.Background(), id)
	if err != nil || se.ID != id || se.TTL != "10s" {
		t.Fatalf("renew: %+v, %v", se, err)
	}
	if d1, _ := s.leader.TTLDeadline(id); !d1.Equal(clock.Now().Add(20 * time.Second)) {
		t.Fatalf("deadline after renew %v, want now+20s", d1)
	}
	if _, err := s.Renew(context.Background(), "nope"); !errors.Is(err, leader.ErrSessionNotFound) {
		t.Fatalf("renew of unknown session: %v", err)
	}
	mustApply(t, s, model.Command{DestroySession: &model.DestroySession{ID: id}})
	if _, ok := s.leader.TTLDeadline(id); ok {
		t.Fatal("destroyed session kept its deadline")
	}
	if _, err := s.Renew(context.Background(), id); !errors.Is(err, leader.ErrSessionNotFound) {
		t.Fatalf("renew of destroyed session: %v", err)
	}
}

func TestLockDelayRefusedBeforeRaft(t *testing.T) {
	s, clock := startDev(t, Config{})
	a := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "dev", LockDelay: 5 * time.Second}}).SessionID
	b := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "dev"}}).SessionID
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: a}})
	mustApply(t, s, model.Command{DestroySession: &model.DestroySession{ID: a}})
	last := s.raft.LastIndex()
	for _, cmd := range []model.Command{
		{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: b}},
		{Txn: model.KVTxn(model.KVOp{Verb: model.KVSet, Key: "x"}, model.KVOp{Verb: model.KVLock, Key: "k", Session: b})},
	} {
		_, err := s.Apply(context.Background(), cmd)
		var lde *leader.LockDelayError
		if !errors.As(err, &lde) || lde.Key != "k" || lde.Remaining != 5*time.Second {
			t.Fatalf("acquire under lock-delay: %v", err)
		}
	}
	if s.raft.LastIndex() != last {
		t.Fatal("a refused acquire was proposed to raft")
	}
	// Set, cas, delete are not blocked (S24).
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}})
	clock.Advance(5 * time.Second)
	if !mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: b}}).OK {
		t.Fatal("acquire after the delay failed")
	}
}

// TestLockDelayRefusedByStateMachine replays the window S22 closes on a
// real server: a lock checked (and stamped) before an invalidation lands
// after it, and every server's state machine refuses it.
func TestLockDelayRefusedByStateMachine(t *testing.T) {
	s, _ := startDev(t, Config{})
	a := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "dev", LockDelay: 5 * time.Second}}).SessionID
	b := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "dev"}}).SessionID
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: a}})
	// The leader's check stamps a lock with the state index it saw; this
	// one was checked before the destroy below (leader.Core.Apply does the
	// stamping, and turns the refusal into a *leader.LockDelayError).
	var seen uint64
	s.Read(func(st *model.State) { seen = st.Index() })
	lock := model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: b, LockDelaySeen: seen}}
	mustApply(t, s, model.Command{DestroySession: &model.DestroySession{ID: a}})
	data, err := s.fsm.Encode(lock)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.propose(context.Background(), data)
	if err != nil || res.OK || res.Index == 0 || len(res.DelayRefused) != 1 || res.DelayRefused[0] != "k" {
		t.Fatalf("late lock: result %+v, err %v; want an applied refusal for lock-delay on k", res, err)
	}
	s.Read(func(st *model.State) {
		if e, _ := st.Get("k"); e.Session != "" {
			t.Fatalf("late lock took the key: %+v", e)
		}
	})
}

func TestServerSurvivesUndecodableEntry(t *testing.T) {
	s, _ := startDev(t, Config{})
	// A well-formed entry's version byte, then a command type no
	// version has.
	valid, err := s.fsm.Encode(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	f := s.raft.Apply([]byte{valid[0], 200, 1, 2, 3}, 0)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	err, ok := f.Response().(error)
	if !ok || !strings.Contains(err.Error(), "unknown command type 200") {
		t.Fatalf("response %v, want the decode error", f.Response())
	}
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "still", Value: []byte("works")}})
}

func TestFollowerRefusesLeaderOnlyCalls(t *testing.T) {
	c := newTestCluster(t, 3)
	c.waitRegistered()
	lead := c.leader()
	f := c.nodes[(lead+1)%3].srv
	ctx := context.Background()
	if _, err := f.Apply(ctx, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("follower Apply: %v", err)
	}
	if _, err := f.Renew(ctx, "x"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("follower Renew: %v", err)
	}
	if err := f.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("follower VerifyLeader: %v", err)
	}
	c.waitFor("the follower knowing the leader's address", func() bool { _, _, known := f.Leader(); return known })
	isLeader, addr, known := f.Leader()
	if isLeader || !known || addr != c.nodes[lead].name {
		t.Errorf("follower Leader() = %v %q %v, want the leader's raft address", isLeader, addr, known)
	}
	if f.LastContact() <= 0 || f.LastContact() > time.Minute {
		t.Errorf("follower LastContact %v", f.LastContact())
	}
	if f.leader.InTerm() {
		t.Error("follower has an active TTL book")
	}
}

func TestConfigValidation(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no node name", Config{Dev: true}, "NodeName is required"},
		{"multiplier below 1", Config{NodeName: "n", Dev: true, TTLMultiplier: 0.5}, "TTLMultiplier 0.5 is below 1"},
		{"no raft address", Config{NodeName: "n", DataDir: dir}, "RaftAddr"},
		{"no data dir", Config{NodeName: "n", RaftAddr: "127.0.0.1:0"}, "DataDir"},
		{"peers without self", Config{NodeName: "n", RaftAddr: "127.0.0.1:0", DataDir: dir,
			Peers: []Peer{{Name: "m", RaftAddr: "x"}}}, "do not include this node"},
		{"duplicate peer", Config{NodeName: "n", RaftAddr: "127.0.0.1:0", DataDir: dir,
			Peers: []Peer{{Name: "n", RaftAddr: "x"}, {Name: "n", RaftAddr: "y"}}}, "listed twice"},
		{"peer without addr", Config{NodeName: "n", RaftAddr: "127.0.0.1:0", DataDir: dir,
			Peers: []Peer{{Name: "n"}}}, "needs a name and a raft address"},
		{"invalid raft config", Config{NodeName: "n", Dev: true,
			tuneRaft: func(c *raft.Config) { c.HeartbeatTimeout = time.Microsecond }}, "raft"},
	}
	for _, tc := range cases {
		s, err := NewServer(tc.cfg)
		if err == nil {
			_ = s.Shutdown()
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.want)
		}
	}
}

func TestShutdownIsFinal(t *testing.T) {
	s, _ := startDev(t, Config{})
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	if _, err := s.Apply(context.Background(), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}); err == nil {
		t.Fatal("Apply after shutdown succeeded")
	}
}
