package model_test

import (
	"errors"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// edit returns a copy of s with f applied to it as plain data: how these
// tests build the broken states that the checkers must reject.
func edit(s *model.State, f func(*model.Snapshot)) *model.State {
	snap := s.Snapshot()
	f(&snap)
	return model.RestoreUnchecked(snap)
}

// healthy builds a small valid state: node n1 with serfHealth, session s1
// bound to it holding key k (LockIndex 1) and having released key "free",
// and a delete-behaviour session d holding key dk.
func healthy(t *testing.T) *model.State {
	t.Helper()
	s := model.New()
	cmds := []model.Command{
		{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}},
		{CreateSession: &model.CreateSession{ID: "s1", Node: "n1", Checks: []string{"serfHealth"}}},
		{CreateSession: &model.CreateSession{ID: "d", Node: "n1", Behavior: model.BehaviorDelete}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "s1"}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "dk", Session: "d"}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "free", Session: "s1"}},
		{KV: &model.KVOp{Verb: model.KVUnlock, Key: "free", Session: "s1"}},
	}
	for i, c := range cmds {
		if res := s.Apply(uint64(i+1), c); res.Failed() || !res.OK {
			t.Fatalf("setup step %d failed: %+v", i, res)
		}
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatalf("setup state is not healthy: %v", err)
	}
	return s
}

func wantViolation(t *testing.T, err error, name string) {
	t.Helper()
	var inv *model.InvariantError
	if !errors.As(err, &inv) {
		t.Fatalf("want violation %q, got %v", name, err)
	}
	if inv.Name != name {
		t.Fatalf("want violation %q, got %q (%s)", name, inv.Name, inv.Detail)
	}
}

// TestCheckInvariantsCatchesCorruption feeds deliberately corrupted states to
// CheckInvariants: each must be reported under the right name.
func TestCheckInvariantsCatchesCorruption(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(s *model.Snapshot)
		want    string
	}{
		{"key held by missing session", func(s *model.Snapshot) { delete(s.Sessions, "s1") }, model.InvHolderExists},
		{"LockIndex above issued", func(s *model.Snapshot) {
			e := s.KV["k"]
			e.LockIndex = 5
			s.KV["k"] = e
		}, model.InvLockIndexIssued},
		{"held with LockIndex 0", func(s *model.Snapshot) {
			e := s.KV["k"]
			e.LockIndex = 0
			s.KV["k"] = e
		}, model.InvLockIndexIssued},
		{"ModifyIndex beyond table", func(s *model.Snapshot) {
			e := s.KV["k"]
			e.ModifyIndex = 99
			s.KV["k"] = e
		}, model.InvIndexBounds},
		{"CreateIndex after ModifyIndex", func(s *model.Snapshot) {
			e := s.KV["k"]
			e.CreateIndex = e.ModifyIndex + 1
			s.KV["k"] = e
		}, model.InvIndexBounds},
		{"session outlives node", func(s *model.Snapshot) {
			delete(s.Nodes, "n1")
			for k := range s.Checks {
				delete(s.Checks, k)
			}
		}, model.InvSessionNode},
		{"session outlives critical check", func(s *model.Snapshot) {
			k := model.CheckKey{Node: "n1", CheckID: "serfHealth"}
			c := s.Checks[k]
			c.Status = model.HealthCritical
			s.Checks[k] = c
		}, model.InvSessionChecks},
		{"session outlives deleted check", func(s *model.Snapshot) {
			delete(s.Checks, model.CheckKey{Node: "n1", CheckID: "serfHealth"})
		}, model.InvSessionChecks},
		{"check on missing node", func(s *model.Snapshot) {
			s.Checks[model.CheckKey{Node: "ghost", CheckID: "x"}] = model.Check{Node: "ghost", CheckID: "x", Status: model.HealthPassing, CreateIndex: 1, ModifyIndex: 1}
		}, model.InvCheckNode},
		{"live key tombstoned", func(s *model.Snapshot) { s.Tombstones["k"] = 1 }, model.InvTombstone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := healthy(t)
			s = edit(s, c.corrupt)
			wantViolation(t, s.CheckInvariants(), c.want)
		})
	}
}

// TestCheckTransitionCatchesBadSteps feeds corrupted successor states to
// CheckTransition: each bad step must be reported under the right name.
func TestCheckTransitionCatchesBadSteps(t *testing.T) {
	const idx = 8
	cases := []struct {
		name string
		// step applies a real command (or none) and then corrupts the result.
		cmd     *model.Command
		corrupt func(next *model.Snapshot, res *model.Result)
		want    string
	}{
		{"rejected command changed state",
			&model.Command{CreateSession: &model.CreateSession{ID: "x", Node: "ghost"}},
			func(next *model.Snapshot, _ *model.Result) { next.Tables.Nodes = idx },
			model.InvRejectNoChange},
		{"acquire reissues a sequencer",
			&model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "free", Session: "s1"}},
			func(next *model.Snapshot, _ *model.Result) {
				e := next.KV["free"]
				e.LockIndex = 1 // (free, 1, s1) was issued before it was released
				next.KV["free"] = e
				next.LockIssued["free"] = 1
			}, model.InvSequencerUnique},
		{"LockIndex falls on set",
			&model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}},
			func(next *model.Snapshot, _ *model.Result) {
				e := next.KV["k"]
				e.LockIndex = 0 // what Consul does (S34)
				next.KV["k"] = e
			}, model.InvLockIndexMonotonic},
		{"write without new ModifyIndex",
			&model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}},
			func(next *model.Snapshot, _ *model.Result) {
				e := next.KV["k"]
				e.ModifyIndex = 4
				next.KV["k"] = e
				next.Tables.KV = idx
			}, model.InvIndexAdvances},
		{"delete behaviour leaves key",
			&model.Command{DestroySession: &model.DestroySession{ID: "d"}},
			func(next *model.Snapshot, _ *model.Result) {
				next.KV["dk"] = model.KVEntry{Key: "dk", LockIndex: 1, CreateIndex: 5, ModifyIndex: idx}
				delete(next.Tombstones, "dk")
			}, model.InvInvalidationEffects},
		{"release behaviour drops LockIndex",
			&model.Command{DestroySession: &model.DestroySession{ID: "s1"}},
			func(next *model.Snapshot, _ *model.Result) {
				e := next.KV["k"]
				e.LockIndex = 0
				next.KV["k"] = e
			}, model.InvLockIndexMonotonic},
		{"session vanishes unreported",
			&model.Command{DestroySession: &model.DestroySession{ID: "s1"}},
			func(_ *model.Snapshot, res *model.Result) { res.Invalidated = nil },
			model.InvInvalidationEffects},
		{"session mutated",
			&model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "z"}},
			func(next *model.Snapshot, _ *model.Result) {
				se := next.Sessions["s1"]
				se.TTL = "30s"
				next.Sessions["s1"] = se
			}, model.InvSessionImmutable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := healthy(t)
			next := prev.Clone()
			res := next.Apply(idx, *c.cmd)
			if err := model.CheckTransition(prev, next, res); err != nil {
				t.Fatalf("uncorrupted step already fails: %v", err)
			}
			next = edit(next, func(n *model.Snapshot) { c.corrupt(n, &res) })
			wantViolation(t, model.CheckTransition(prev, next, res), c.want)
		})
	}
}
