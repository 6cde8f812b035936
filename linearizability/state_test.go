package linearizability

import (
	"testing"

	"github.com/tenurekv/tenure/model"
)

// Catalog writes in either order around a KV write reach one canonical
// state: node and check indexes are never compared, so canon drops them.
func TestCanonicalStatesForgetCatalogIndexes(t *testing.T) {
	c := &checker{known: map[string]bool{}}
	base := &pstate{m: model.New(), tr: map[string]tracker{}}
	base.m.Apply(1, model.Command{Register: &model.Register{Node: "n1"}})
	base.canon()
	sc := &scope{all: true}
	one := func(s *pstate, r *rec) *pstate {
		next := c.step(s, stepIn{r: r, sc: sc})
		if len(next) != 1 {
			t.Fatalf("%d successor states", len(next))
		}
		return next[0]
	}
	set := &rec{kind: kindKV, ret: 1, out: Output{OK: true},
		cmds: []model.Command{{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}}}}
	for name, cmd := range map[string]model.Command{
		"new node":  {Register: &model.Register{Node: "n2", Address: "10.0.0.2"}},
		"new check": {Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "web", Status: model.HealthPassing}}}},
	} {
		reg := &rec{kind: kindShared, ret: 1, out: Output{OK: true}, cmds: []model.Command{cmd}}
		a, b := one(one(base, reg), set), one(one(base, set), reg)
		if !a.equal(b) || a.hash() != b.hash() {
			t.Errorf("%s: orders differ after canonicalisation:\n%s\n%s", name, c.describeState(a), c.describeState(b))
		}
	}
}

// hashState is a partition state with several sessions, keys and trackers,
// so that map order has room to vary.
func hashState(t *testing.T, edit func(m *model.Snapshot, tr map[string]tracker)) *pstate {
	t.Helper()
	m := model.New()
	m.Apply(1, model.Command{Register: &model.Register{Node: "n1"}})
	for i, id := range []string{"a-sess", "b-sess", "c-sess"} {
		m.Apply(uint64(2+i), model.Command{CreateSession: &model.CreateSession{ID: id, Node: "n1"}})
	}
	for i, k := range []string{"k1", "k2", "k3"} {
		m.Apply(uint64(5+i), model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: k, Value: []byte("v"), Session: "a-sess"}})
	}
	tr := map[string]tracker{"k1": {L: 5, M: 50}, "k2": {L: 6, M: 60}, "k3": {DelayFrom: 1, DelayTo: 2}}
	if edit != nil {
		snap := m.Snapshot()
		edit(&snap, tr)
		m = model.RestoreUnchecked(snap)
	}
	return &pstate{m: m, tr: tr}
}

// Equal states hash alike whatever order their maps are walked in; states
// that differ in one session ID, one entry field or one tracker value hash
// apart, so porcupine's memo keeps them in different buckets.
func TestStateHash(t *testing.T) {
	s := hashState(t, nil)
	h := s.hash()
	for range 20 {
		if s.hash() != h || s.clone().hash() != h {
			t.Fatal("one state, two hashes")
		}
	}
	for name, edit := range map[string]func(m *model.Snapshot, tr map[string]tracker){
		"session ID": func(m *model.Snapshot, _ map[string]tracker) {
			se := m.Sessions["b-sess"]
			delete(m.Sessions, "b-sess")
			se.ID = "x-sess"
			m.Sessions["x-sess"] = se
		},
		"LockIndex": func(m *model.Snapshot, _ map[string]tracker) {
			e := m.KV["k2"]
			e.LockIndex++
			m.KV["k2"] = e
		},
		"Flags": func(m *model.Snapshot, _ map[string]tracker) {
			e := m.KV["k2"]
			e.Flags = 1
			m.KV["k2"] = e
		},
		"ModifyIndex": func(m *model.Snapshot, _ map[string]tracker) {
			e := m.KV["k2"]
			e.ModifyIndex++
			m.KV["k2"] = e
		},
		"tracker M":      func(_ *model.Snapshot, tr map[string]tracker) { tr["k1"] = tracker{L: 5, M: 51} },
		"tracker delay":  func(_ *model.Snapshot, tr map[string]tracker) { tr["k3"] = tracker{DelayFrom: 1, DelayTo: 3} },
		"tracked key ID": func(_ *model.Snapshot, tr map[string]tracker) { tr["j3"] = tr["k3"]; delete(tr, "k3") },
	} {
		o := hashState(t, edit)
		if o.equal(s) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if o.hash() == h {
			t.Errorf("%s: states that differ hash alike (%#x)", name, h)
		}
	}
}
