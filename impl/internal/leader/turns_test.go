package leader

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestTurnsOrderBySeniority: the session that began waiting first outranks
// a later one while both are present, keeps its standing across its
// refusals, and loses it on acquiring or after turnForget unseen.
func TestTurnsOrderBySeniority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ts turns
		b := ts.enter("k", "b")
		ts.waiting(b)
		time.Sleep(time.Millisecond)
		c := ts.enter("k", "c")
		ts.waiting(c)
		if _, ok := ts.outranked(b); ok {
			t.Fatal("the first waiter is outranked")
		}
		moved, ok := ts.outranked(c)
		if !ok {
			t.Fatal("the later waiter is not outranked by the first")
		}
		newcomer := ts.enter("k", "d")
		if _, ok := ts.outranked(newcomer); !ok {
			t.Fatal("a newcomer is not outranked by waiters")
		}
		ts.leave(newcomer)
		select {
		case <-moved:
		default:
			t.Fatal("a waiter leaving did not wake the deferring ones")
		}

		// b is refused and comes back: it keeps its place, but c does not
		// defer to it while it is away.
		ts.leave(b)
		if _, ok := ts.outranked(c); ok {
			t.Fatal("c outranked by b while b is not at the leader")
		}
		b = ts.enter("k", "b")
		if _, ok := ts.outranked(c); !ok {
			t.Fatal("b's standing did not survive its refusal")
		}
		ts.acquired(b)
		if _, ok := ts.outranked(c); ok {
			t.Fatal("b kept its standing after acquiring")
		}
		ts.leave(b)
		ts.leave(c)
		time.Sleep(turnForget + time.Millisecond)
		if _, ok := ts.outranked(b); ok {
			t.Fatal("c's standing outranks b after turnForget unseen")
		}

		// c's standing lapses once unseen for turnForget; the key goes.
		e := ts.enter("other", "e")
		if len(ts.keys) != 1 || ts.keys["other"] == nil {
			t.Fatalf("after turnForget the book still holds %d keys", len(ts.keys))
		}
		ts.leave(e)
		if len(ts.keys) != 0 {
			t.Fatalf("a key with no waiter left is kept")
		}
	})
}

// TestLeaderCoreServesTheLongestWaiterFirst: two acquires wait at the
// leader for a held key; when it is released, the one that began waiting
// first takes it, whichever of them the scheduler wakes first, every time.
func TestLeaderCoreServesTheLongestWaiterFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newCoreHarnessWith(t, true, "a", "b", "c", "d")
		a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		c := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		holder, senior, junior := a, b, c
		for round := range 20 {
			h.apply(t, lockCmd("k", holder))
			first := applyAsync(t, h, lockCmd("k", senior))
			synctest.Wait()
			time.Sleep(time.Microsecond)
			second := applyAsync(t, h, lockCmd("k", junior))
			synctest.Wait()
			if _, err := h.core.Apply(context.Background(), model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: holder}}); err != nil {
				t.Fatal(err)
			}
			if r1, r2 := <-first, <-second; !r1.OK || r2.OK {
				t.Fatalf("round %d: the earlier waiter got %v, the later %v; want only the earlier", round, r1.OK, r2.OK)
			}
			// The winner lets go; the loser, refused, waited longest now.
			h.apply(t, model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: senior}})
			holder, senior, junior = senior, junior, holder
		}
	})
}

// TestLeaderCoreDoesNotHoldAFreeKeyForAnAbsentWaiter: a session refused
// earlier is not at the leader when the key frees (a consul/api Lock waiter
// in its blocking read, a spinning client between attempts); a newcomer
// that finds the key free takes it at once instead of deferring to it. A
// deferral there cost consul/api's Lock waiters more refusals than it won
// them turns, and each refusal can send one into its 5 s retry sleep
// (bench/results/2026-11-29-tail-latency.md).
func TestLeaderCoreDoesNotHoldAFreeKeyForAnAbsentWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newCoreHarnessWith(t, true, "a", "b", "c", "d")
		a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
		h.apply(t, lockCmd("k", a))
		// b's acquire waits out HoldWait and is refused: b has a standing.
		if res := h.apply(t, lockCmd("k", b)); res.OK {
			t.Fatal("acquire of a held key succeeded")
		}
		h.apply(t, model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: a}})
		start := time.Now()
		if res := h.apply(t, lockCmd("k", a)); !res.OK || time.Since(start) != 0 {
			t.Fatalf("the newcomer with b away: %+v after %v; want the key at once", res, time.Since(start))
		}
	})
}
