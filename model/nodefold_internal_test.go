package model

import "testing"

// TestNodeFoldInvariantCatchesCorruption: the node-name index (S62) is
// derived state that no snapshot carries, so only an in-package test can
// break it; each break is reported.
func TestNodeFoldInvariantCatchesCorruption(t *testing.T) {
	build := func() *State {
		s := New()
		for i, name := range []string{"Ab", "cd"} {
			if res := s.Apply(uint64(i+1), Command{Register: &Register{Node: name, Address: "10.0.0.1"}}); res.Failed() {
				t.Fatal(res.Err)
			}
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("healthy state: %v", err)
		}
		return s
	}
	for name, corrupt := range map[string]func(s *State){
		"a node missing":        func(s *State) { delete(s.nodeFold, "cd") },
		"a key of no node":      func(s *State) { s.nodeFold["zz"] = []string{"zz"} },
		"a key under the wrong": func(s *State) { s.nodeFold["ab"] = []string{"cd"} },
		"unsorted keys":         func(s *State) { s.nodeFold["ab"] = []string{"ab", "Ab"} },
		"an empty entry":        func(s *State) { s.nodeFold["xy"] = nil },
	} {
		s := build()
		corrupt(s)
		err := s.CheckInvariants()
		if ie, ok := err.(*InvariantError); !ok || ie.Name != InvNodeFold {
			t.Errorf("%s: got %v, want %s", name, err, InvNodeFold)
		}
	}
}

// TestNodeIDIndexInvariantCatchesCorruption: the node-ID index (S62) is
// derived state too; a missing, stale or extra entry is reported.
func TestNodeIDIndexInvariantCatchesCorruption(t *testing.T) {
	build := func() *State {
		s := New()
		for i, name := range []string{"a", "b"} {
			reg := Register{Node: name, ID: "4f5a3c1e-0000-4000-8000-00000000000" + string(rune('1'+i)), Address: "10.0.0.1"}
			if res := s.Apply(uint64(i+1), Command{Register: &reg}); res.Failed() {
				t.Fatal(res.Err)
			}
		}
		if res := s.Apply(3, Command{Register: &Register{Node: "c", Address: "10.0.0.1"}}); res.Failed() {
			t.Fatal(res.Err)
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("healthy state: %v", err)
		}
		return s
	}
	for name, corrupt := range map[string]func(s *State){
		"an ID not indexed":        func(s *State) { delete(s.nodeIDs, "4f5a3c1e-0000-4000-8000-000000000001") },
		"an ID indexed to another": func(s *State) { s.nodeIDs["4f5a3c1e-0000-4000-8000-000000000001"] = "b" },
		"an ID no node has":        func(s *State) { s.nodeIDs["4f5a3c1e-0000-4000-8000-000000000009"] = "c" },
	} {
		s := build()
		corrupt(s)
		err := s.CheckInvariants()
		if ie, ok := err.(*InvariantError); !ok || ie.Name != InvNodeIDIndex {
			t.Errorf("%s: got %v, want %s", name, err, InvNodeIDIndex)
		}
	}
}
