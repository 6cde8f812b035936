package simnet

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

var lan = Link{Latency: time.Millisecond, Jitter: time.Millisecond}

func TestRaftElectApplyIsolateHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seedRaft(1)
		c := newCluster(t, 3, Options{Seed: 1, Link: lan}, nil)
		defer c.shutdown()

		old := c.waitLeader(10 * time.Second)
		t.Logf("first leader %s after %v", c.names[old], c.net.Elapsed())
		if err := c.applyAll(old, seq(1, 1000)); err != nil {
			t.Fatalf("applying 1000 entries: %v", err)
		}
		if got := c.waitConverged(5*time.Second, 1000); !slices.Equal(got, seq(1, 1000)) {
			t.Fatal("FSM order differs from the applied order")
		}

		oldTerm := c.rafts[old].CurrentTerm()
		cut := time.Now()
		if err := c.net.Isolate(c.names[old]); err != nil {
			t.Fatal(err)
		}
		c.waitFor(5*time.Second, "old leader did not step down", func() bool {
			return c.rafts[old].State() != raft.Leader
		})
		stepDown := time.Since(cut)
		next := c.waitLeader(10*time.Second, old)
		t.Logf("old leader stepped down after %v; %s elected after %v", stepDown, c.names[next], time.Since(cut))
		if got := c.rafts[next].CurrentTerm(); got <= oldTerm {
			t.Fatalf("new leader's term %d does not supersede the old leader's %d", got, oldTerm)
		}
		if err := c.applyAll(next, seq(1001, 100)); err != nil {
			t.Fatalf("applying on the new leader: %v", err)
		}
		if n := len(c.fsms[old].values()); n != 1000 {
			t.Errorf("isolated old leader applied %d entries, want 1000", n)
		}

		c.net.Heal()
		if got := c.waitConverged(10*time.Second, 1100); !slices.Equal(got, seq(1, 1100)) {
			t.Fatal("converged FSMs differ from the applied sequence")
		}
		if ls := c.leaders(); len(ls) != 1 {
			t.Errorf("after heal: leaders %v", ls)
		}
	})
}

func TestRaftConvergesUnderDropsAndLostReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seedRaft(2)
		lossy := lan
		lossy.DropRate = 0.1
		c := newCluster(t, 3, Options{Seed: 2, Link: lossy}, nil)
		defer c.shutdown()

		// Apply one at a time through whoever leads, retrying on failure;
		// a failed Apply may still commit, so duplicates are allowed.
		var acked []uint64
		apply := func(v uint64) {
			for try := 0; ; try++ {
				if try > 50 {
					t.Fatalf("value %d not applied after 50 tries", v)
				}
				l := c.waitLeader(30 * time.Second)
				if err := c.rafts[l].Apply(cmd(v), 2*time.Second).Error(); err == nil {
					acked = append(acked, v)
					return
				}
			}
		}
		for v := range uint64(150) {
			apply(v)
		}
		// Lost replies only: a follower hears the leader but its answers
		// never arrive.
		l := c.waitLeader(30 * time.Second)
		f := (l + 1) % 3
		if err := c.net.PartitionOneWay([]string{c.names[f]}, []string{c.names[l]}); err != nil {
			t.Fatal(err)
		}
		for v := range uint64(50) {
			apply(150 + v)
		}
		c.net.Heal()
		if err := c.net.SetDefaultLink(lan); err != nil {
			t.Fatal(err)
		}
		c.waitFor(30*time.Second, "FSMs did not converge", func() bool {
			v0 := c.fsms[0].values()
			for _, f := range c.fsms[1:] {
				if !slices.Equal(f.values(), v0) {
					return false
				}
			}
			for _, v := range acked {
				if !slices.Contains(v0, v) {
					return false
				}
			}
			return true
		})
		drops, cuts, touts := c.trace.count(Drop, "random drop"), c.trace.count(Drop, "partition"), c.trace.count(Timeout, "")
		if drops == 0 || cuts == 0 || touts == 0 {
			t.Errorf("scenario exercised too little loss: %d random drops, %d lost replies, %d timeouts", drops, cuts, touts)
		}
		t.Logf("converged after %v virtual; %d random drops, %d partition drops, %d RPC timeouts",
			c.net.Elapsed(), c.trace.count(Drop, "random drop"), c.trace.count(Drop, "partition"), c.trace.count(Timeout, ""))
	})
}

func TestRaftSnapshotInstall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seedRaft(3)
		c := newCluster(t, 3, Options{Seed: 3, Link: lan}, func(cfg *raft.Config) {
			cfg.TrailingLogs = 10
			cfg.SnapshotThreshold = 50
		})
		defer c.shutdown()
		l := c.waitLeader(10 * time.Second)
		f := (l + 1) % 3
		if err := c.net.Isolate(c.names[f]); err != nil {
			t.Fatal(err)
		}
		if err := c.applyAll(l, seq(1, 300)); err != nil {
			t.Fatal(err)
		}
		if err := c.rafts[l].Snapshot().Error(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		c.net.Heal()
		c.waitConverged(20*time.Second, 300)
		installed := false
		for _, e := range c.trace.all() {
			if e.Kind == Deliver && strings.HasPrefix(e.Msg, "re InstallSnapshot") && strings.Contains(e.Msg, "ok=true") {
				installed = true
			}
		}
		if !installed {
			t.Error("follower caught up without a successful InstallSnapshot")
		}
	})
}

func TestRaftLeadershipTransfer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seedRaft(4)
		c := newCluster(t, 3, Options{Seed: 4, Link: lan}, nil)
		defer c.shutdown()
		l := c.waitLeader(10 * time.Second)
		if err := c.rafts[l].LeadershipTransfer().Error(); err != nil {
			t.Fatalf("leadership transfer: %v", err)
		}
		if next := c.waitLeader(5 * time.Second); next == l {
			t.Error("leadership did not move")
		}
		if !slices.ContainsFunc(c.trace.all(), func(e Event) bool { return e.Msg == "re TimeoutNow" }) {
			t.Error("no TimeoutNow round trip in the trace")
		}
	})
}

func TestRaftPausedLeaderResumesStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seedRaft(5)
		c := newCluster(t, 3, Options{Seed: 5, Link: lan}, nil)
		defer c.shutdown()
		old := c.waitLeader(10 * time.Second)
		if err := c.applyAll(old, seq(1, 10)); err != nil {
			t.Fatal(err)
		}
		if err := c.net.Pause(c.names[old]); err != nil {
			t.Fatal(err)
		}
		next := c.waitLeader(10*time.Second, old)
		if err := c.applyAll(next, seq(11, 10)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if err := c.net.Resume(c.names[old]); err != nil {
			t.Fatal(err)
		}
		c.waitConverged(10*time.Second, 20)
		if ls := c.leaders(); len(ls) != 1 {
			t.Errorf("leaders after resume: %v", ls)
		}
		if c.trace.count(Hold, "") == 0 {
			t.Error("pause held nothing")
		}
		// An Apply on the deposed leader must now fail rather than commit.
		if l := c.leaders(); len(l) == 1 && l[0] != old {
			if err := c.rafts[old].Apply(cmd(99), time.Second).Error(); !errors.Is(err, raft.ErrNotLeader) {
				t.Errorf("apply on deposed leader: %v, want ErrNotLeader", err)
			}
		}
	})
}
