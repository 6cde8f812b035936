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
		if got := DecideVoter(voters, tc.m, "s1"); got.Change != tc.want {
			t.Errorf("%s: got %+v, want %d", tc.name, got, tc.want)
		}
	}
	// Seen from another leader, the first voter leaving is removed.
	if got := DecideVoter(voters, server("s1", "10.0.0.1:8300", Left), "s2"); got != (VoterDecision{Change: RemoveVoter, ID: "s1"}) {
		t.Errorf("the first voter left: got %+v, want RemoveVoter s1", got)
	}
}

// TestDecideVoterNodeIDs: a server with a node ID is a voter under it; an
// entry of its under its name (tenure's IDs before node IDs) or a dead
// server's at its address is replaced, and one under its node ID at the
// same address is left alone.
func TestDecideVoterNodeIDs(t *testing.T) {
	const u2 = "6f0b5cf5-0c3c-4a0a-9a4c-2c1d2b3e4f52"
	legacy := []Voter{{ID: "s1", Address: "10.0.0.1:8300"}, {ID: "s2", Address: "10.0.0.2:8300"}}
	migrated := []Voter{{ID: "s1", Address: "10.0.0.1:8300"}, {ID: u2, Address: "10.0.0.2:8300"}}
	s2 := func(addr string, st Status) Member {
		return Member{Name: "s2", ID: u2, Status: st, Server: true, RaftAddr: addr}
	}
	for _, tc := range []struct {
		name   string
		voters []Voter
		m      Member
		want   VoterDecision
	}{
		{"name entry replaced", legacy, s2("10.0.0.2:8300", Alive), VoterDecision{Change: ReplaceVoter, ID: u2, Stale: "s2"}},
		{"name entry at an old address replaced", legacy, s2("10.0.0.7:8300", Alive), VoterDecision{Change: ReplaceVoter, ID: u2, Stale: "s2"}},
		{"migrated entry left alone", migrated, s2("10.0.0.2:8300", Alive), VoterDecision{}},
		{"migrated entry at a new address re-added", migrated, s2("10.0.0.8:8300", Alive), VoterDecision{Change: AddVoter, ID: u2}},
		{"a dead server's address taken over", legacy, Member{Name: "s3", ID: u2, Status: Alive, Server: true, RaftAddr: "10.0.0.2:8300"},
			VoterDecision{Change: ReplaceVoter, ID: u2, Stale: "s2"}},
		{"left, listed by node ID", migrated, s2("10.0.0.2:8300", Left), VoterDecision{Change: RemoveVoter, ID: u2}},
		{"left, listed by name", legacy, s2("10.0.0.2:8300", Left), VoterDecision{Change: RemoveVoter, ID: "s2"}},
		{"new server added by node ID", legacy[:1], s2("10.0.0.2:8300", Alive), VoterDecision{Change: AddVoter, ID: u2}},
	} {
		if got := DecideVoter(tc.voters, tc.m, "s1"); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestSafeToReplaceSelf: the leader gives up its name entry only with two
// other voters, each an alive server under its node ID.
func TestSafeToReplaceSelf(t *testing.T) {
	const u2, u3 = "6f0b5cf5-0c3c-4a0a-9a4c-2c1d2b3e4f52", "6f0b5cf5-0c3c-4a0a-9a4c-2c1d2b3e4f53"
	voters := []Voter{{ID: "s1", Address: "a1"}, {ID: u2, Address: "a2"}, {ID: u3, Address: "a3"}}
	alive := []Member{{Name: "s2", ID: u2, Server: true, Status: Alive}, {Name: "s3", ID: u3, Server: true, Status: Alive}}
	if !SafeToReplaceSelf(voters, alive, "s1") {
		t.Error("two alive migrated peers: want safe")
	}
	down := []Member{alive[0], {Name: "s3", ID: u3, Server: true, Status: Failed}}
	if SafeToReplaceSelf(voters, down, "s1") {
		t.Error("a failed peer: want unsafe")
	}
	unmigrated := []Voter{voters[0], voters[1], {ID: "s3", Address: "a3"}}
	if SafeToReplaceSelf(unmigrated, alive, "s1") {
		t.Error("a peer still under its name: want unsafe")
	}
	if SafeToReplaceSelf(voters[:2], alive, "s1") {
		t.Error("two voters: want unsafe")
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
	withIDs := append([]Member{}, three...)
	withIDs[0].ID = "6f0b5cf5-0c3c-4a0a-9a4c-2c1d2b3e4f53"
	if voters, _, _ := BootstrapSet(withIDs, 3); voters[0].ID != withIDs[0].ID {
		t.Fatalf("a server with a node ID is listed under it: %v", voters)
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
