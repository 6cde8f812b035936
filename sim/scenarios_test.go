package sim

import (
	"sync"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// The named scenarios: each a fixed script on the real cluster. Each asserts
// what the fenced resource accepted and refused, what the unfenced one let
// through (the stale writes a fence exists to stop, S50), and that every
// check passes on the trace.

// shared returns g and a second configuration contending for the same key.
func shared(g workload.LockGroup, name string, mode core.CheckMode, ttl, lockDelay time.Duration) (workload.LockGroup, workload.LockGroup) {
	o := sceneGroup(name, mode, ttl, lockDelay)
	o.Key = g.Key
	return g, o
}

// TestSceneGCPausePastTTL: A holds a TTL lock, decides to write, and stalls
// (a GC pause) for longer than TTL×2 plus the lock-delay. The server expires
// the session; B takes the lock and writes. A wakes and writes as if nothing
// happened: the unfenced resource takes the stale write, the fenced one
// refuses it in both modes.
func TestSceneGCPausePastTTL(t *testing.T) {
	ga, gb := shared(sceneGroup("gc", core.ChecksTTL, 10*time.Second, 15*time.Second), "gc-b", core.ChecksNone, 0, 0)
	var aFirst, aUnf, aTok, aTxn, bTok string
	var aSeq, bSeq model.Sequencer
	var believed bool
	res := runScene(t, 1, []workload.LockGroup{ga, gb}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.Create(ga)
		a.lockRetry(time.Second, 10*time.Second)
		aSeq = a.w.Seq
		aFirst = a.write(core.ResFenced, core.FenceTxn)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(5 * time.Second)
			b.Create(gb)
			b.lockRetry(time.Second, 60*time.Second)
			bSeq = b.w.Seq
			bTok = b.write(core.ResFenced, core.FenceToken)
		}()
		believed = a.w.Believes() // the check...
		a.pause(45 * time.Second) // ...the pause...
		aUnf = a.write(core.ResUnfenced, "")
		aTok = a.write(core.ResFenced, core.FenceToken) // ...and the act
		aTxn = a.write(core.ResFenced, core.FenceTxn)
		wg.Wait()
	})
	if !believed {
		t.Fatal("A did not believe it held the lock before the pause")
	}
	if bSeq.LockIndex <= aSeq.LockIndex {
		t.Fatalf("B's sequencer %+v does not follow A's %+v", bSeq, aSeq)
	}
	expectWrites(t, res, core.ResFenced, true, aFirst, bTok)
	expectWrites(t, res, core.ResFenced, false, aTok, aTxn)
	expectWrites(t, res, core.ResUnfenced, true, aUnf)
	if !staleAt(res, aSeq, writeAt(t, res, core.ResUnfenced, aUnf)) {
		t.Error("A's write after the pause was not stale: its holding had not ended")
	}
	sceneClean(t, res)
}

// TestSceneDelayedPacket: A's write to the resources is delayed 10s in the
// network; meanwhile A releases, B acquires and writes. A's packet then
// lands: the unfenced resource takes a write from a finished holding, older
// than one it already has (an overlap); the fenced one refuses it.
func TestSceneDelayedPacket(t *testing.T) {
	g := sceneGroup("delay", core.ChecksNone, 0, 0)
	var aUnf, aTok, bUnf, bTok string
	var aSeq model.Sequencer
	res := runScene(t, 2, []workload.LockGroup{g}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.Create(g)
		a.lockRetry(time.Second, 10*time.Second)
		aSeq = a.w.Seq
		_ = s.Net.SetLink("A", core.ResNode, simnet.Link{Latency: 10 * time.Second})
		aUnf, aTok = a.w.Value(), a.w.Value()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); a.w.WriteRes(core.ResUnfenced, "", aUnf) }()
		go func() { defer wg.Done(); a.w.WriteRes(core.ResFenced, core.FenceToken, aTok) }()
		time.Sleep(100 * time.Millisecond)
		a.release()
		b.Create(g)
		b.lockRetry(time.Second, 10*time.Second)
		bUnf = b.write(core.ResUnfenced, "")
		bTok = b.write(core.ResFenced, core.FenceToken)
		wg.Wait()
	})
	expectWrites(t, res, core.ResFenced, true, bTok)
	expectWrites(t, res, core.ResFenced, false, aTok)
	expectWrites(t, res, core.ResUnfenced, true, aUnf, bUnf)
	if at := writeAt(t, res, core.ResUnfenced, aUnf); !staleAt(res, aSeq, at) || at < writeAt(t, res, core.ResUnfenced, bUnf) {
		t.Error("A's delayed write did not land stale, after B's")
	}
	sceneClean(t, res)
}

// TestSceneCheckThenAct: A checks that it holds the lock (a read shows its
// session), then stalls before acting; its TTL session expires and B takes
// the lock, but has not written yet. A acts: the check-sequencer fence
// refuses it; the token fence, which has seen no higher LockIndex yet,
// accepts it (a token orders writes, it does not prove the holder is
// current); after B writes, A's next token write is refused.
func TestSceneCheckThenAct(t *testing.T) {
	ga, gb := shared(sceneGroup("cta", core.ChecksTTL, 10*time.Second, 0), "cta-b", core.ChecksNone, 0, 0)
	var aTxn, aTok, aTok2, bTok string
	var aSeq model.Sequencer
	var checked bool
	res := runScene(t, 3, []workload.LockGroup{ga, gb}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.Create(ga)
		a.lockRetry(time.Second, 10*time.Second)
		aSeq = a.w.Seq
		r := a.w.Api.Get(ga.Key) // the check
		checked = r.Outcome == core.OutOK && r.Found && r.Entries[0].Session == aSeq.Session
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(5 * time.Second)
			b.Create(gb)
			b.lockRetry(time.Second, 40*time.Second)
		}()
		a.pause(30 * time.Second)
		aTxn = a.write(core.ResFenced, core.FenceTxn) // the act
		aTok = a.write(core.ResFenced, core.FenceToken)
		wg.Wait()
		bTok = b.write(core.ResFenced, core.FenceToken)
		aTok2 = a.write(core.ResFenced, core.FenceToken)
	})
	if !checked {
		t.Fatal("A's check did not show it holding the lock")
	}
	expectWrites(t, res, core.ResFenced, false, aTxn, aTok2)
	expectWrites(t, res, core.ResFenced, true, aTok, bTok)
	if !staleAt(res, aSeq, writeAt(t, res, core.ResFenced, aTok)) {
		t.Error("A's token write was not stale")
	}
	sceneClean(t, res)
}

// TestSceneClientClockSkew: A's clock runs at a fifth of real speed, so it
// renews too late and believes its TTL lock long after the server expired
// it. B takes over; A's writes under its wrong belief are stale: the
// unfenced resource takes them, the fenced one refuses them. A's late
// renew then answers 404 (S20).
func TestSceneClientClockSkew(t *testing.T) {
	ga, gb := shared(sceneGroup("skew", core.ChecksTTL, 10*time.Second, 0), "skew-b", core.ChecksNone, 0, 0)
	var staleUnf, refusedTok []string
	var aSeq model.Sequencer
	var renew *core.Ret
	res := runScene(t, 4, []workload.LockGroup{ga, gb}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.w.Clock.SetRate(0.2)
		a.Create(ga)
		a.lockRetry(time.Second, 10*time.Second)
		aSeq = a.w.Seq
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(10 * time.Second)
			b.Create(gb)
			b.lockRetry(time.Second, 30*time.Second)
			b.write(core.ResFenced, core.FenceToken)
		}()
		// A's loop: renew at TTL/2 and write every second, both by its
		// own clock, while it believes it holds the lock.
		for a.w.Believes() {
			if !a.w.Clock.Now().Before(a.w.LastRenew.Add(5 * time.Second)) {
				if renew = a.Renew(); !renew.Found {
					break
				}
			}
			if s.Rec.Elapsed()-s.T0 > 22*time.Second {
				staleUnf = append(staleUnf, a.write(core.ResUnfenced, ""))
				refusedTok = append(refusedTok, a.write(core.ResFenced, core.FenceToken))
			}
			a.w.Clock.Sleep(200 * time.Millisecond)
		}
		wg.Wait()
	})
	if renew == nil || renew.Outcome != core.OutOK || renew.Found {
		t.Fatalf("A's late renew: %+v, want a 404", renew)
	}
	if len(staleUnf) == 0 {
		t.Fatal("A never wrote under its wrong belief")
	}
	expectWrites(t, res, core.ResUnfenced, true, staleUnf...)
	expectWrites(t, res, core.ResFenced, false, refusedTok...)
	for _, v := range staleUnf {
		if !staleAt(res, aSeq, writeAt(t, res, core.ResUnfenced, v)) {
			t.Errorf("write %s was not stale", v)
		}
	}
	sceneClean(t, res)
}

// TestSceneLockDelayVersusRelease: with a 15s lock-delay, B takes a key A
// released at once (S23), but a key whose holder was invalidated only after
// the delay, every earlier try refused for lock-delay (S22, S25).
func TestSceneLockDelayVersusRelease(t *testing.T) {
	gRel := sceneGroup("released", core.ChecksNone, 0, 15*time.Second)
	gInv := sceneGroup("invalidated", core.ChecksNone, 0, 15*time.Second)
	bRel, bInv := sceneGroup("b-rel", core.ChecksNone, 0, 0), sceneGroup("b-inv", core.ChecksNone, 0, 0)
	bRel.Key, bInv.Key = gRel.Key, gInv.Key
	var relRefused, invRefused []*core.Ret
	var destroyAt, invAt time.Duration
	res := runScene(t, 5, []workload.LockGroup{gRel, gInv, bRel, bInv}, func(s *scene) {
		a1, a2, b1, b2 := s.actor("A1"), s.actor("A2"), s.actor("B1"), s.actor("B2")
		a1.Create(gRel)
		a2.Create(gInv)
		a1.lockRetry(time.Second, 10*time.Second)
		a2.lockRetry(time.Second, 10*time.Second)
		b1.Create(bRel)
		b2.Create(bInv)
		a1.release()
		relRefused = b1.lockRetry(time.Second, 5*time.Second)
		destroyAt = s.Rec.Elapsed()
		a2.w.Api.Destroy(a2.w.Session)
		invRefused = b2.lockRetry(500*time.Millisecond, 30*time.Second)
		invAt = s.Rec.Elapsed()
	})
	if len(relRefused) != 0 {
		t.Errorf("acquire after an explicit release refused %d times", len(relRefused))
	}
	if len(invRefused) == 0 {
		t.Fatal("acquire right after an invalidation was not refused")
	}
	for _, r := range invRefused {
		if !r.LockDelay {
			t.Errorf("refusal not reported as lock-delay: %+v", r)
		}
	}
	if invAt-destroyAt < 15*time.Second {
		t.Errorf("acquired %v after the invalidation, within its 15s lock-delay", invAt-destroyAt)
	}
	sceneClean(t, res)
}

// TestSceneFailoverMidTTL: A stops renewing its TTL session; halfway through
// TTL×2 the leader is killed. The new leader re-arms a full TTL×2 (S21), so
// the session outlives its old deadline, and still never dies before TTL on
// the invalidating leader's clock since it took office (S18). B then gets
// the lock.
func TestSceneFailoverMidTTL(t *testing.T) {
	ga, gb := shared(sceneGroup("failover", core.ChecksTTL, 10*time.Second, 0), "failover-b", core.ChecksNone, 0, 0)
	var renewedAt, killedAt time.Duration
	var sid string
	res := runScene(t, 6, []workload.LockGroup{ga, gb}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		sid = a.Create(ga)
		a.lockRetry(time.Second, 10*time.Second)
		a.Renew()
		renewedAt = s.Rec.Elapsed()
		time.Sleep(10 * time.Second)
		if s.Cl.Leader() == nil {
			panic("no leader")
		}
		killedAt = s.Rec.Elapsed()
		// The injector's leader-kill, marked as a seeded run marks it, so
		// the gossip checks excuse what the dead server's links do (S53).
		f := core.Fault{ID: 1, Kind: core.FaultLeaderKill, Dur: 5 * time.Second}
		restart := s.inj.Start(f)
		time.Sleep(5 * time.Second)
		restart()
		s.inj.Mark(f, "end", nil, "")
		b.Create(gb)
		b.lockRetry(time.Second, 60*time.Second)
	})
	ix := checks.NewIndex(res.Events)
	var goneAt, newLeader time.Duration = -1, -1
	for _, o := range ix.Obs {
		for _, g := range o.Obs.GoneSess {
			if g.ID == sid && goneAt < 0 {
				goneAt = o.At
			}
		}
	}
	for _, spans := range ix.Leader {
		for _, iv := range spans {
			if iv.Start > killedAt && (newLeader < 0 || iv.Start < newLeader) {
				newLeader = iv.Start
			}
		}
	}
	if goneAt < 0 || newLeader < 0 {
		t.Fatalf("session gone at %v, new leader at %v", goneAt, newLeader)
	}
	if goneAt < renewedAt+20*time.Second {
		t.Errorf("session expired at %v, before its pre-failover deadline %v", goneAt, renewedAt+20*time.Second)
	}
	if goneAt < newLeader+10*time.Second {
		t.Errorf("session expired %v after the new leader took office, less than its TTL", goneAt-newLeader)
	}
	t.Logf("renewed at %v, leader killed at %v, new leader at %v, expired at %v", renewedAt, killedAt, newLeader, goneAt)
	sceneClean(t, res)
}

// TestSceneWaiterExpires: B waits for A's lock with a blocking read and does
// not renew its TTL session meanwhile. When A releases, B's session is long
// gone: its acquire is an error (invalid session, S30), not a false, and B
// must create a new session to take the lock.
func TestSceneWaiterExpires(t *testing.T) {
	ga, gb := shared(sceneGroup("waiter-a", core.ChecksNone, 0, 0), "waiter-b", core.ChecksTTL, 10*time.Second, 0)
	var held, stale *core.Ret
	var bWrite string
	res := runScene(t, 7, []workload.LockGroup{ga, gb}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.Create(ga)
		a.lockRetry(time.Second, 10*time.Second)
		b.Create(gb)
		held = b.lock()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(40 * time.Second)
			a.release()
		}()
		g := b.w.Api.Get(gb.Key)
		slow := *b.w.Api
		slow.Timeout = 90 * time.Second
		slow.GetBlocking(gb.Key, g.Entries[0].ModifyIndex, 60*time.Second)
		stale = b.lock()
		wg.Wait()
		b.Create(gb)
		b.lockRetry(time.Second, 10*time.Second)
		bWrite = b.write(core.ResFenced, core.FenceTxn)
	})
	if held.Outcome != core.OutOK || held.OK || held.LockDelay {
		t.Fatalf("B's first acquire: %+v, want refused as held", held)
	}
	if stale.Outcome != core.OutOK || len(stale.TxnErrors) == 0 || !workload.IsInvalidSession(stale.TxnErrors[0].What) {
		t.Fatalf("B's acquire after its session expired: %+v, want invalid session", stale)
	}
	expectWrites(t, res, core.ResFenced, true, bWrite)
	sceneClean(t, res)
}

// TestSceneFalsePositive: A is alive and holds a lock through a session
// bound to its node's serfHealth; a false failure detection marks the node
// critical (S12), which invalidates the session. B takes the lock and
// writes; A, unaware, writes too: the unfenced resource takes the stale
// write, the fenced one refuses it. A's next renew answers 404.
func TestSceneFalsePositive(t *testing.T) {
	ga, gb := shared(sceneGroup("fp", core.ChecksSerf, 0, 0), "fp-b", core.ChecksNone, 0, 0)
	var aUnf, aTok, bTok string
	var aSeq model.Sequencer
	var renew *core.Ret
	res := runScene(t, 8, []workload.LockGroup{ga, gb}, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.Create(ga)
		a.lockRetry(time.Second, 10*time.Second)
		aSeq = a.w.Seq
		a.write(core.ResFenced, core.FenceToken)
		f := core.Fault{ID: 1, Kind: core.FaultFalsePositive, Dur: 3 * time.Second, Pick: 0} // A's agent
		heal := s.inj.Start(f)
		b.Create(gb)
		b.lockRetry(500*time.Millisecond, 10*time.Second)
		bTok = b.write(core.ResFenced, core.FenceToken)
		aUnf = a.write(core.ResUnfenced, "")
		aTok = a.write(core.ResFenced, core.FenceToken)
		time.Sleep(3 * time.Second)
		heal()
		s.inj.Mark(f, "end", nil, "")
		renew = a.Renew()
	})
	expectWrites(t, res, core.ResFenced, true, bTok)
	expectWrites(t, res, core.ResFenced, false, aTok)
	expectWrites(t, res, core.ResUnfenced, true, aUnf)
	if !staleAt(res, aSeq, writeAt(t, res, core.ResUnfenced, aUnf)) {
		t.Error("A's write after the false positive was not stale")
	}
	if renew.Outcome != core.OutOK || renew.Found {
		t.Errorf("A's renew after the false positive: %+v, want 404", renew)
	}
	sceneClean(t, res)
}
