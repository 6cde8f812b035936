package reconcile

import (
	"strings"
	"testing"
)

// TestDecideVoter (S53): each way a member can change the raft
// configuration, and each way it must not.
func TestDecideVoter(t *testing.T) {
	voters := []Voter{{ID: "s1", Address: "10.0.0.1:8300"}, {ID: "s2", Address: "10.0.0.2:8300"}}
	server := func(name, addr string, st Status) Member {
		return Member{Name: name, Status: st, Server: true, RaftAddr: addr}
	}
	for _, tc := range []struct {
		name string
		m    Member
		want VoterChange
	}{
		{"new alive server is added", server("s3", "10.0.0.3:8300", Alive), AddVoter},
		{"known server at its address is left alone", server("s2", "10.0.0.2:8300", Alive), noVoterChange},
		{"known server at a new address is re-added", server("s2", "10.0.0.9:8300", Alive), AddVoter},
		{"server that left is removed", server("s2", "10.0.0.2:8300", Left), RemoveVoter},
		{"reaped server is removed", server("s2", "10.0.0.2:8300", Reaped), RemoveVoter},
		{"failed server stays a voter", server("s2", "10.0.0.2:8300", Failed), noVoterChange},
		{"leaving server is not removed yet", server("s2", "10.0.0.2:8300", Leaving), noVoterChange},
		{"the leader never removes itself", server("s1", "10.0.0.1:8300", Left), noVoterChange},
		{"a server that left and was never a voter", server("s9", "10.0.0.9:8300", Left), noVoterChange},
		{"a client is never a voter", Member{Name: "c1", Status: Alive}, noVoterChange},
		{"a server without a raft address is not added", server("s4", "", Alive), noVoterChange},
		{"the first voter at its address is left alone", server("s1", "10.0.0.1:8300", Alive), noVoterChange},
	} {
		if got := DecideVoter(voters, tc.m, "s1"); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
	// Seen from another leader, the first voter leaving is removed.
	if got := DecideVoter(voters, server("s1", "10.0.0.1:8300", Left), "s2"); got != RemoveVoter {
		t.Errorf("the first voter left: got %d, want RemoveVoter", got)
	}
}

// TestBootstrapSet: a cluster forms from exactly the alive servers once
// there are enough, never next to an existing one, and never with a
// server that expects another number.
func TestBootstrapSet(t *testing.T) {
	srv := func(name string, expect int) Member {
		return Member{Name: name, Status: Alive, Server: true, RaftAddr: name + ":8300", Expect: expect}
	}
	three := []Member{srv("s3", 3), srv("s1", 3), {Name: "c1", Status: Alive}, srv("s2", 3)}
	voters, ok, err := BootstrapSet(three, 3)
	if err != nil || !ok || len(voters) != 3 || voters[0].ID != "s1" || voters[2].Address != "s3:8300" {
		t.Fatalf("three servers expecting 3: %v %v %v", voters, ok, err)
	}
	if _, ok, err := BootstrapSet(three[:2], 3); ok || err != nil {
		t.Fatalf("two servers expecting 3 bootstrapped: %v %v", ok, err)
	}
	failed := append([]Member{}, three...)
	failed[0].Status = Failed
	if _, ok, _ := BootstrapSet(failed, 3); ok {
		t.Fatal("a failed server was counted")
	}
	existing := append([]Member{}, three...)
	existing[1].Bootstrapped = true
	if _, ok, err := BootstrapSet(existing, 3); ok || err != nil {
		t.Fatalf("bootstrapped next to an existing cluster: %v %v", ok, err)
	}
	conflict := append([]Member{}, three...)
	conflict[3].Expect = 5
	if _, ok, err := BootstrapSet(conflict, 3); ok || err == nil || !strings.Contains(err.Error(), "conflicting expect value") {
		t.Fatalf("conflicting expect: %v %v", ok, err)
	}
}
