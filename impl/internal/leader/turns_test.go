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

		// b is refused and comes back: it keeps its place.
		ts.leave(b)
		if _, ok := ts.outranked(c); ok {
			t.Fatal("c outranked by a session not present")
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

		// c's standing lapses once unseen for turnForget; the key goes.
		time.Sleep(turnForget + time.Millisecond)
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
		h := newCoreHarnessWith(t, true, "a", "b", "c")
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
