package sim

import (
	"math/rand"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// TestSceneGossipDetectsCrashedServer (S53): servers run LAN gossip over
// the simulated network, and a crashed follower is declared failed by memberlist
// and the leader sets its serfHealth critical within memberlist's LAN
// detection time (probe 1 s, suspicion 4 s with three members, Lifeguard's
// stretch, CONSUL.md §13); once restarted and rejoined it is passing again.
func TestSceneGossipDetectsCrashedServer(t *testing.T) {
	cfg := workload.DefaultConfig(7)
	cfg.Schedule, cfg.Faults = []core.Fault{}, nil
	cfg.Groups = []workload.LockGroup{sceneGroup("g", core.ChecksSerf, 0, 0)}
	synctest.Test(t, func(t *testing.T) {
		//lint:ignore SA1019 raft, memberlist and serf no longer draw from the global source (third_party/); seeding it keeps any draw still made there repeatable.
		rand.Seed(7)
		e, err := workload.StartEnv(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		// serf reads node's serfHealth on server on (an index into
		// e.Cl.Servers).
		serf := func(on int, node string) model.Health {
			var st model.Health
			e.Cl.Servers[on].Current().Read(func(s *model.State) {
				c, _ := s.Check(model.CheckKey{Node: node, CheckID: model.SerfHealthCheckID})
				st = c.Status
			})
			return st
		}
		waitHealth := func(on int, node string, want model.Health, limit time.Duration) time.Duration {
			t.Helper()
			start := time.Now()
			for serf(on, node) != want {
				if time.Since(start) > limit {
					t.Fatalf("%s's serfHealth is %q after %v, want %q", node, serf(on, node), limit, want)
				}
				time.Sleep(100 * time.Millisecond)
			}
			return time.Since(start)
		}
		leaderIndex := func() int {
			t.Helper()
			for i, s := range e.Cl.Servers {
				if s == e.Cl.Leader() {
					return i
				}
			}
			t.Fatal("no leader")
			return -1
		}
		// Every server's serfHealth passes before the crash, and the victim
		// is chosen only then: leadership can still move while the cluster
		// settles, and crashing the leader would time an election, not the
		// gossip detector.
		for _, s := range e.Cl.Servers {
			waitHealth(leaderIndex(), s.Name, model.HealthPassing, 30*time.Second)
		}
		leader := leaderIndex()
		victim := e.Cl.Servers[0]
		if leader == 0 {
			victim = e.Cl.Servers[1]
		}

		e.Cl.Crash(victim)
		took := waitHealth(leader, victim.Name, model.HealthCritical, 30*time.Second)
		// The suspicion period is 4 s with three members. Before it, each
		// survivor probes the victim at least once in two probe intervals of
		// 1 s, which Lifeguard may stretch up to 8 times for a prober that
		// recently missed nacks: 4 s + 16 s at most. A lost member-failed
		// event would wait for the full reconcile (60 s) and trip the limit
		// of waitHealth.
		if took < 4*time.Second || took > 20*time.Second {
			t.Errorf("crash detected after %v; memberlist's LAN timing gives 4-20 s", took)
		}
		t.Logf("crashed %s marked critical after %v (virtual); leader %s before, %s after",
			victim.Name, took, e.Cl.Servers[leader].Name, e.Cl.Servers[leaderIndex()].Name)

		if err := e.Cl.Start(victim); err != nil {
			t.Fatal(err)
		}
		waitHealth(leader, victim.Name, model.HealthPassing, 60*time.Second)
		if _, err := e.Finish(cfg); err != nil {
			t.Fatal(err)
		}
	})
}
