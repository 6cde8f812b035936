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
