package reconcile

import (
	"fmt"
	"slices"
	"strings"
)

// Voter is one raft server as the leader's configuration lists it.
type Voter struct {
	ID, Address string
}

// VoterChange is what the raft configuration needs for one member.
type VoterChange int

// VoterChanges.
const (
	noVoterChange VoterChange = iota
	AddVoter                  // a new server (or one at a new address)
	RemoveVoter               // a server that left or was reaped
	// ReplaceVoter removes the member's entry under another ID (its node
	// name, as tenure named servers before node IDs, or a dead server's
	// at the same address) and adds it under its raft ID.
	ReplaceVoter
)

// VoterDecision is DecideVoter's answer: the change, the raft ID it adds
// or removes, and for ReplaceVoter the ID of the entry removed first.
type VoterDecision struct {
	Change VoterChange
	ID     string
	Stale  string
}

// RaftID is the raft server ID of a server member: its node ID, as in
// Consul, or its name when it advertises none.
func RaftID(m Member) string {
	if m.ID != "" {
		return m.ID
	}
	return m.Name
}

// DecideVoter says what the raft configuration needs for m, as Consul's
// leader does before any catalog write (CONSUL.md §13): an alive server it
// does not list (or lists at another address) is added as a voter, one it
// lists under another ID (its name, or a server gone from the same
// address) is replaced, a server that left or was reaped is removed. A
// failed server stays: it may come back, and removing it would also take
// its sessions (SPEC S53). The leader never removes itself for leaving; a
// replacement of the leader itself is the caller's to weigh
// (SafeToReplaceSelf), since it ends the leader's term.
func DecideVoter(voters []Voter, m Member, self string) VoterDecision {
	if !m.Server || m.RaftAddr == "" {
		return VoterDecision{}
	}
	id := RaftID(m)
	cur := slices.IndexFunc(voters, func(v Voter) bool { return v.ID == id })
	byName := slices.IndexFunc(voters, func(v Voter) bool { return v.ID != id && v.ID == m.Name })
	switch m.Status {
	case Alive:
		if cur >= 0 {
			if voters[cur].Address != m.RaftAddr {
				return VoterDecision{Change: AddVoter, ID: id}
			}
			return VoterDecision{}
		}
		stale := byName
		if stale < 0 {
			stale = slices.IndexFunc(voters, func(v Voter) bool { return v.Address == m.RaftAddr })
		}
		if stale >= 0 {
			return VoterDecision{Change: ReplaceVoter, ID: id, Stale: voters[stale].ID}
		}
		return VoterDecision{Change: AddVoter, ID: id}
	case Left, Reaped:
		if m.Name == self {
			return VoterDecision{}
		}
		if cur >= 0 {
			return VoterDecision{Change: RemoveVoter, ID: id}
		}
		if byName >= 0 {
			return VoterDecision{Change: RemoveVoter, ID: voters[byName].ID}
		}
	}
	return VoterDecision{}
}

// SafeToReplaceSelf says whether the leader may remove its own entry to
// have it re-added under its node ID: only with at least three voters, as
// Consul requires, every other one listed under the raft ID of an alive
// server member. Those can elect the next leader, which adds this server
// back; with fewer, or with one of them down, the removal could leave a
// configuration that elects no one.
func SafeToReplaceSelf(voters []Voter, members []Member, selfEntry string) bool {
	if len(voters) < 3 {
		return false
	}
	alive := map[string]bool{}
	for _, m := range members {
		if m.Server && m.Status == Alive && m.ID != "" {
			alive[m.ID] = true
		}
	}
	for _, v := range voters {
		if v.ID != selfEntry && !alive[v.ID] {
			return false
		}
	}
	return true
}

// BootstrapSet returns the servers to bootstrap a raft cluster with once
// enough have joined, as Consul's -bootstrap-expect does: every alive
// server gossip knows, when there are at least expect of them, none
// already belongs to a cluster and all expect the same number. Each is
// listed under its raft ID (RaftID). ok is false while that does not
// hold; err says why it never will.
func BootstrapSet(members []Member, expect int) (voters []Voter, ok bool, err error) {
	for _, m := range members {
		if !m.Server || m.Status != Alive {
			continue
		}
		if m.Bootstrapped {
			// A cluster exists: its leader adds newcomers as voters.
			return nil, false, nil
		}
		if m.Expect != expect {
			return nil, false, fmt.Errorf("member %s has a conflicting expect value (%d, this server %d): all servers should expect the same number", m.Name, m.Expect, expect)
		}
		voters = append(voters, Voter{ID: RaftID(m), Address: m.RaftAddr})
	}
	if len(voters) < expect {
		return nil, false, nil
	}
	slices.SortFunc(voters, func(a, b Voter) int { return strings.Compare(a.ID, b.ID) })
	return voters, true, nil
}
