package model_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestEqualSeesEachSessionField: states that differ in one field of one
// session are not equal (S1: sessions never change, so any change is a bug
// the checks must see).
func TestEqualSeesEachSessionField(t *testing.T) {
	for name, change := range map[string]func(se *model.Session){
		"ID":          func(se *model.Session) { se.ID = "other" },
		"Name":        func(se *model.Session) { se.Name = "other" },
		"Node":        func(se *model.Session) { se.Node = "other" },
		"Checks":      func(se *model.Session) { se.Checks = []string{"other"} },
		"LockDelay":   func(se *model.Session) { se.LockDelay = time.Minute },
		"Behavior":    func(se *model.Session) { se.Behavior = model.BehaviorDelete },
		"TTL":         func(se *model.Session) { se.TTL = "99s" },
		"CreateIndex": func(se *model.Session) { se.CreateIndex = 99 },
		"ModifyIndex": func(se *model.Session) { se.ModifyIndex = 99 },
	} {
		a := healthy(t)
		b := edit(a, func(s *model.Snapshot) {
			se := s.Sessions["s1"]
			change(&se)
			s.Sessions["s1"] = se
		})
		if a.Equal(b) {
			t.Errorf("states differing in session %s compare equal", name)
		}
	}
}

// TestCheckListFilters: node and status filter independently and together.
func TestCheckListFilters(t *testing.T) {
	s := model.New()
	s.Apply(1, model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
		{CheckID: "a", Status: model.HealthPassing}, {CheckID: "b", Status: model.HealthWarning}}}})
	s.Apply(2, model.Command{Register: &model.Register{Node: "n2", Checks: []model.CheckSpec{
		{CheckID: "a", Status: model.HealthWarning}}}})
	ids := func(cs []model.Check) (out []string) {
		for _, c := range cs {
			out = append(out, c.Node+"/"+c.CheckID)
		}
		return out
	}
	for _, tc := range []struct {
		node   string
		status model.Health
		want   []string
	}{
		{"", "", []string{"n1/a", "n1/b", "n2/a"}},
		{"n1", "", []string{"n1/a", "n1/b"}},
		{"", model.HealthWarning, []string{"n1/b", "n2/a"}},
		{"n2", model.HealthWarning, []string{"n2/a"}},
		{"n2", model.HealthPassing, nil},
	} {
		if got := ids(s.CheckList(tc.node, tc.status)); !slices.Equal(got, tc.want) {
			t.Errorf("CheckList(%q, %q) = %v, want %v", tc.node, tc.status, got, tc.want)
		}
	}
}

// TestKeysPrefixAndSeparator: keys outside the prefix are skipped wherever
// they sort, and a separator right after the prefix cuts there.
func TestKeysPrefixAndSeparator(t *testing.T) {
	s := model.New()
	for i, k := range []string{"a", "b/", "b/x", "b/y/z", "c"} {
		s.Apply(uint64(i+1), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: k}})
	}
	if got := s.Keys("b", ""); !slices.Equal(got, []string{"b/", "b/x", "b/y/z"}) {
		t.Errorf("Keys(b) = %q", got)
	}
	if got := s.Keys("b", "/"); !slices.Equal(got, []string{"b/"}) {
		t.Errorf("Keys(b, /) = %q, want [b/]", got)
	}
	if got := s.Keys("b/", "/"); !slices.Equal(got, []string{"b/", "b/x", "b/y/"}) {
		t.Errorf("Keys(b/, /) = %q", got)
	}
}

// TestRegisterSkipsUnchangedChecks (S37): re-registering a node with the
// same check writes nothing; a renamed check is written.
func TestRegisterSkipsUnchangedChecks(t *testing.T) {
	s := model.New()
	reg := func(idx uint64, name string) model.Result {
		return s.Apply(idx, model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
			{CheckID: "a", Name: name, Status: model.HealthPassing}}}})
	}
	reg(1, "first")
	reg(2, "first")
	if got := s.Tables().Checks; got != 1 {
		t.Fatalf("an identical re-register moved the checks table to %d", got)
	}
	reg(3, "second")
	if got := s.Tables().Checks; got != 3 {
		t.Fatalf("a renamed check left the checks table at %d", got)
	}
}
