package model_test

import (
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestEqualSeesEveryQueryField: State.Equal compares stored prepared queries
// field by field (tests and the rejected-command rule, S8, lean on it), so
// two states that differ in any one field of a query are unequal.
func TestEqualSeesEveryQueryField(t *testing.T) {
	base := func(edit func(q *model.PreparedQuery)) *model.State {
		t.Helper()
		s := model.New()
		cmds := []model.Command{
			{Register: &model.Register{Node: "n1", Address: "10.0.0.1",
				Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}}},
			{CreateSession: &model.CreateSession{ID: "s1", Node: "n1", Behavior: model.BehaviorRelease}},
			{CreateSession: &model.CreateSession{ID: "s2", Node: "n1", Behavior: model.BehaviorRelease}},
		}
		q := model.PreparedQuery{ID: "q1", Name: "web", Session: "s1", Token: "t",
			Service: model.ServiceQuery{Service: "web", Failover: model.QueryFailover{NearestN: 1},
				IgnoreCheckIDs: []string{"a"}, Near: "_agent", Tags: []string{"v1"},
				NodeMeta: map[string]string{"k": "v"}, ServiceMeta: map[string]string{"k": "v"}},
			DNS: model.QueryDNS{TTL: "10s"}}
		if edit != nil {
			edit(&q)
		}
		cmds = append(cmds, model.Command{Query: &model.QueryOp{Op: model.QueryCreate, Query: q}})
		for i, c := range cmds {
			if res := s.Apply(uint64(i+1), c); res.Err != nil {
				t.Fatalf("command %d: %v", i, res.Err)
			}
		}
		return s
	}
	ref := base(nil)
	if !ref.Equal(base(nil)) {
		t.Fatal("two states built alike are unequal")
	}
	edits := map[string]func(q *model.PreparedQuery){
		"Name":           func(q *model.PreparedQuery) { q.Name = "api" },
		"Session":        func(q *model.PreparedQuery) { q.Session = "s2" },
		"Token":          func(q *model.PreparedQuery) { q.Token = "u" },
		"Service":        func(q *model.PreparedQuery) { q.Service.Service = "db" },
		"NearestN":       func(q *model.PreparedQuery) { q.Service.Failover.NearestN = 2 },
		"Datacenters":    func(q *model.PreparedQuery) { q.Service.Failover.Datacenters = []string{"dc2"} },
		"OnlyPassing":    func(q *model.PreparedQuery) { q.Service.OnlyPassing = true },
		"IgnoreCheckIDs": func(q *model.PreparedQuery) { q.Service.IgnoreCheckIDs = []string{"b"} },
		"Near":           func(q *model.PreparedQuery) { q.Service.Near = "n1" },
		"Tags":           func(q *model.PreparedQuery) { q.Service.Tags = []string{"v2"} },
		"NodeMeta":       func(q *model.PreparedQuery) { q.Service.NodeMeta = map[string]string{"k": "w"} },
		"ServiceMeta":    func(q *model.PreparedQuery) { q.Service.ServiceMeta = map[string]string{"k": "w"} },
		"DNS":            func(q *model.PreparedQuery) { q.DNS.TTL = "20s" },
	}
	for field, edit := range edits {
		if ref.Equal(base(edit)) {
			t.Errorf("states whose query differs only in %s are equal", field)
		}
	}
	// Targets cannot sit beside NearestN (S57), so they get a base of their own.
	noNearest := func(q *model.PreparedQuery) { q.Service.Failover.NearestN = 0 }
	withTarget := func(q *model.PreparedQuery) {
		noNearest(q)
		q.Service.Failover.Targets = []model.QueryTarget{{Peer: "p1"}}
	}
	if base(noNearest).Equal(base(withTarget)) {
		t.Error("states whose query differs only in Targets are equal")
	}
}

// TestEqualSeesEveryNodeField: two states whose one node differs in any
// field, nil meta against empty included (S62), are unequal.
func TestEqualSeesEveryNodeField(t *testing.T) {
	ref := model.Node{Name: "n1", ID: "4f5a3c1e-0000-4000-8000-000000000001", Address: "10.0.0.1",
		TaggedAddresses: map[string]string{"lan": "10.0.0.1"}, Meta: map[string]string{"rack": "r1"},
		CreateIndex: 1, ModifyIndex: 2}
	state := func(n model.Node) *model.State {
		return model.RestoreUnchecked(model.Snapshot{Nodes: map[string]model.Node{"n1": n},
			Tables: model.TableIndexes{Nodes: 2}})
	}
	if !state(ref).Equal(state(ref)) {
		t.Fatal("two states built alike are unequal")
	}
	edits := map[string]func(n *model.Node){
		"ID":              func(n *model.Node) { n.ID = "4f5a3c1e-0000-4000-8000-000000000002" },
		"Address":         func(n *model.Node) { n.Address = "10.0.0.2" },
		"TaggedAddresses": func(n *model.Node) { n.TaggedAddresses = map[string]string{"lan": "10.0.0.2"} },
		"Meta":            func(n *model.Node) { n.Meta = map[string]string{"rack": "r2"} },
		"Meta nil":        func(n *model.Node) { n.Meta = nil },
		"Meta empty":      func(n *model.Node) { n.Meta = map[string]string{} },
		"CreateIndex":     func(n *model.Node) { n.CreateIndex = 2 },
		"ModifyIndex":     func(n *model.Node) { n.ModifyIndex = 1 },
	}
	for field, edit := range edits {
		n := ref
		edit(&n)
		if state(ref).Equal(state(n)) {
			t.Errorf("states whose node differs only in %s are equal", field)
		}
	}
	var noMeta, emptyMeta = ref, ref
	noMeta.Meta, emptyMeta.Meta = nil, map[string]string{}
	if state(noMeta).Equal(state(emptyMeta)) {
		t.Error("a node with no meta equals one with empty meta")
	}
}
