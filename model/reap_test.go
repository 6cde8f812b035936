package model_test

import (
	"testing"

	"github.com/tenurekv/tenure/model"
)

// reaped is healthy() with "free" (LockIndex 1, unlocked) deleted at 8 and
// reaped at 9, so its watermark now lives only in the floor.
func reaped(t *testing.T) *model.State {
	t.Helper()
	s := healthy(t)
	for i, c := range []model.Command{
		{KV: &model.KVOp{Verb: model.KVDelete, Key: "free"}},
		{Reap: &model.Reap{Index: 8}},
	} {
		prev := s.Clone()
		res := s.Apply(uint64(8+i), c)
		if res.Failed() {
			t.Fatalf("setup step %d failed: %+v", i, res)
		}
		if err := model.CheckTransition(prev, s, res); err != nil {
			t.Fatalf("setup step %d: %v", i, err)
		}
	}
	if s.LockFloor() != 1 || s.LockIssued("free") != 0 {
		t.Fatalf("after reap: floor %d, watermark %d; want 1 and none", s.LockFloor(), s.LockIssued("free"))
	}
	return s
}

// TestReapTransitionsAreChecked shows CheckTransition rejecting each way a
// reap could let a sequencer be issued twice (S52).
func TestReapTransitionsAreChecked(t *testing.T) {
	t.Run("reap without raising the floor", func(t *testing.T) {
		s := healthy(t)
		s.Apply(8, model.Command{KV: &model.KVOp{Verb: model.KVDelete, Key: "free"}})
		prev := s.Clone()
		res := s.Apply(9, model.Command{Reap: &model.Reap{Index: 8}})
		s = edit(s, func(s *model.Snapshot) { s.LockFloor = 0 })
		wantViolation(t, model.CheckTransition(prev, s, res), model.InvSequencerUnique)
	})
	t.Run("re-created key locked at or below the floor", func(t *testing.T) {
		prev := reaped(t)
		next := prev.Clone()
		res := next.Apply(10, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "free", Session: "s1"}})
		if got, _ := next.Get("free"); got.LockIndex != 2 {
			t.Fatalf("re-created key locked at %d, want 2 (above the floor)", got.LockIndex)
		}
		next = edit(next, func(n *model.Snapshot) {
			e := n.KV["free"]
			e.LockIndex = 1 // (free, 1, s1) was issued before the reap
			n.KV["free"] = e
			n.LockIssued["free"] = 1
		})
		wantViolation(t, model.CheckTransition(prev, next, res), model.InvSequencerUnique)
	})
	t.Run("floor falls", func(t *testing.T) {
		prev := reaped(t)
		next := prev.Clone()
		res := next.Apply(10, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "x", Value: []byte("v")}})
		next = edit(next, func(n *model.Snapshot) { n.LockFloor = 0 })
		wantViolation(t, model.CheckTransition(prev, next, res), model.InvSequencerUnique)
	})
	t.Run("reap of a live key's watermark", func(t *testing.T) {
		prev := healthy(t)
		next := prev.Clone()
		res := next.Apply(8, model.Command{Reap: &model.Reap{Index: 7}})
		next = edit(next, func(n *model.Snapshot) {
			delete(n.LockIssued, "k") // k is live and held
			n.LockFloor = 1
		})
		wantViolation(t, model.CheckTransition(prev, next, res), model.InvSequencerUnique)
	})
}
