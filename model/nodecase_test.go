package model_test

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestNodesThatDifferOnlyInCase: a state restored from before node names
// compared ignoring case (S62) can hold "J2" and "j2". An exact name still
// finds its own node, another spelling the least key; and a node without
// an ID among them gives no leave to take the name from one that has an ID
// and a live serfHealth.
func TestNodesThatDifferOnlyInCase(t *testing.T) {
	serf := func(node string) model.Check {
		return model.Check{Node: node, CheckID: model.SerfHealthCheckID, Status: model.HealthPassing, CreateIndex: 1, ModifyIndex: 1}
	}
	s := model.RestoreUnchecked(model.Snapshot{
		Nodes: map[string]model.Node{
			"J2": {Name: "J2", Address: "10.0.0.1", CreateIndex: 1, ModifyIndex: 1},
			"j2": {Name: "j2", ID: "55555555-0000-4000-8000-000000000001", Address: "10.0.0.2", CreateIndex: 1, ModifyIndex: 1},
			"aB": {Name: "aB", Address: "10.0.0.3", CreateIndex: 1, ModifyIndex: 1},
			"Ab": {Name: "Ab", Address: "10.0.0.4", CreateIndex: 1, ModifyIndex: 1},
		},
		Checks: map[model.CheckKey]model.Check{
			{Node: "J2", CheckID: model.SerfHealthCheckID}: serf("J2"),
			{Node: "j2", CheckID: model.SerfHealthCheckID}: serf("j2"),
		},
		Tables: model.TableIndexes{Nodes: 1, Checks: 1},
	})
	for name, want := range map[string]string{"J2": "10.0.0.1", "j2": "10.0.0.2", "aB": "10.0.0.3", "ab": "10.0.0.4", "AB": "10.0.0.4", "J2 ": "", "j2x": ""} {
		n, ok := s.Node(name)
		if ok != (want != "") || n.Address != want {
			t.Errorf("Node(%q) = %+v, %v; want address %q", name, n, ok, want)
		}
	}
	if n, ok := s.Node("J2"); !ok || n.Name != "J2" {
		t.Errorf("Node(J2) found %+v", n)
	}
	res := s.Apply(2, model.Command{Register: &model.Register{Node: "j2", ID: "55555555-0000-4000-8000-000000000002", Address: "10.0.0.2"}})
	if res.Err == nil || !strings.Contains(res.Err.Msg, "is reserved by node 55555555-0000-4000-8000-000000000001 with name j2") {
		t.Errorf("register of j2 with another ID: %+v, want it refused for the live j2", res.Err)
	}
}

// TestRenameOntoAnotherSpelling: in a state from before names ignored case,
// J2 carries an ID and j2, a live node without one, holds the name a
// register of j2 with J2's ID asks for. The check for a reserved name must
// pass over J2 (it carries that very ID) and still find j2.
func TestRenameOntoAnotherSpelling(t *testing.T) {
	const id = "55555555-0000-4000-8000-000000000001"
	s := model.RestoreUnchecked(model.Snapshot{
		Nodes: map[string]model.Node{
			"J2": {Name: "J2", ID: id, Address: "10.0.0.1", CreateIndex: 1, ModifyIndex: 1},
			"j2": {Name: "j2", Address: "10.0.0.2", CreateIndex: 1, ModifyIndex: 1},
		},
		Checks: map[model.CheckKey]model.Check{{Node: "j2", CheckID: model.SerfHealthCheckID}: {Node: "j2",
			CheckID: model.SerfHealthCheckID, Status: model.HealthPassing, CreateIndex: 1, ModifyIndex: 1}},
		Tables: model.TableIndexes{Nodes: 1, Checks: 1},
	})
	res := s.Apply(2, model.Command{Register: &model.Register{Node: "j2", ID: id, Address: "10.0.0.2"}})
	if res.Err == nil || !strings.Contains(res.Err.Msg, "is reserved by node  with name j2") {
		t.Errorf("rename of J2 onto live j2: %+v, want it refused for j2", res.Err)
	}
}
