package model_test

import (
	"fmt"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestRegisterWritesEveryChangedCheck (S12, S37): an unchanged check in a
// re-register is skipped without skipping the checks after it; a later
// check turning critical is written and invalidates its sessions.
func TestRegisterWritesEveryChangedCheck(t *testing.T) {
	s := model.New()
	reg := func(idx uint64, b model.Health) model.Result {
		return s.Apply(idx, model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
			{CheckID: "a", Name: "a", Status: model.HealthPassing}, {CheckID: "b", Name: "b", Status: b}}}})
	}
	reg(1, model.HealthPassing)
	s.Apply(2, model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "n1", Checks: []string{"b"}}})
	res := reg(3, model.HealthCritical)
	if got, _ := s.Check(model.CheckKey{Node: "n1", CheckID: "b"}); got.Status != model.HealthCritical {
		t.Fatalf("check b after re-register: %s, want critical", got.Status)
	}
	if len(res.Invalidated) != 1 || res.Invalidated[0] != "s1" {
		t.Fatalf("invalidated %v, want [s1]", res.Invalidated)
	}
}

// TestTxnReportsEveryFailingOp (S44): an op with an unknown verb does not
// stop the txn's other ops from being judged; every failure is reported.
func TestTxnReportsEveryFailingOp(t *testing.T) {
	s := model.New()
	res := s.Apply(1, model.Command{Txn: model.KVTxn(
		model.KVOp{Verb: "frobnicate", Key: "a"},
		model.KVOp{Verb: model.KVCAS, Key: "b", Index: 7},
		model.KVOp{Verb: model.KVSet, Key: "c"},
	)})
	if len(res.TxnErrors) != 2 || res.TxnErrors[0].OpIndex != 0 || res.TxnErrors[1].OpIndex != 1 {
		t.Fatalf("txn errors %+v, want ops 0 and 1", res.TxnErrors)
	}
	if len(s.List("")) != 0 {
		t.Fatalf("an aborted txn left keys %v", s.List(""))
	}
}

// TestHolderReacquireWritesValueAlone (S28, S37, S38): a holder re-acquiring
// with a new value and the same flags writes the value; only a re-acquire
// with identical value and flags is skipped.
func TestHolderReacquireWritesValueAlone(t *testing.T) {
	s := healthy(t)
	before, _ := s.Get("k")
	lock := func(idx uint64, value string, flags uint64) model.KVEntry {
		t.Helper()
		if res := s.Apply(idx, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "s1", Value: []byte(value), Flags: flags}}); !res.OK {
			t.Fatalf("re-acquire at %d: %+v", idx, res)
		}
		e, _ := s.Get("k")
		return e
	}
	if e := lock(8, "new", before.Flags); string(e.Value) != "new" || e.ModifyIndex != 8 || e.LockIndex != before.LockIndex {
		t.Fatalf("re-acquire with a new value: %+v", e)
	}
	if e := lock(9, "new", before.Flags+1); e.Flags != before.Flags+1 || e.ModifyIndex != 9 {
		t.Fatalf("re-acquire with new flags: %+v", e)
	}
	if e := lock(10, "new", before.Flags+1); e.ModifyIndex != 9 {
		t.Fatalf("an identical re-acquire wrote at %d", e.ModifyIndex)
	}
}

// TestReapSkipsOnlyNewerDeletions (S52): a reap forgets every deletion at or
// below its index and keeps every newer one. It walks a map, so with this
// many of each it meets them mixed; stopping at the first newer one would
// leave older ones behind.
func TestReapSkipsOnlyNewerDeletions(t *testing.T) {
	s := model.New()
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }
	const n = 24
	for i := range 2 * n {
		k := fmt.Sprintf("k%02d", i)
		s.Apply(next(), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: k, Value: []byte("v")}})
	}
	var cut uint64
	for i := range 2 * n {
		s.Apply(next(), model.Command{KV: &model.KVOp{Verb: model.KVDelete, Key: fmt.Sprintf("k%02d", i)}})
		if i == n-1 {
			cut = idx
		}
	}
	if res := s.Apply(next(), model.Command{Reap: &model.Reap{Index: cut}}); res.Failed() {
		t.Fatalf("reap: %+v", res)
	}
	for i := range 2 * n {
		k := fmt.Sprintf("k%02d", i)
		_, kept := s.Tombstone(k)
		if want := i >= n; kept != want {
			t.Errorf("tombstone %s kept=%v, want %v (deleted %s the reap index)", k, kept, want, map[bool]string{true: "after", false: "at or before"}[want])
		}
	}
}
