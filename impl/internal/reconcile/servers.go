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
)

// DecideVoter says what the raft configuration needs for m, as Consul's
// leader does before any catalog write (CONSUL.md §13): an alive server it
// does not list (or lists at another address) is added as a voter, a
// server that left or was reaped is removed. A failed server stays: it may
// come back, and removing it would also take its sessions (SPEC S53). The
// leader never removes itself.
func DecideVoter(voters []Voter, m Member, self string) VoterChange {
	if !m.Server || m.RaftAddr == "" {
		return noVoterChange
	}
	i := slices.IndexFunc(voters, func(v Voter) bool { return v.ID == m.Name })
	switch m.Status {
	case Alive:
		if i < 0 || voters[i].Address != m.RaftAddr {
			return AddVoter
		}
	case Left, Reaped:
		if i >= 0 && m.Name != self {
			return RemoveVoter
		}
	}
	return noVoterChange
}

// BootstrapSet returns the servers to bootstrap a raft cluster with once
// enough have joined, as Consul's -bootstrap-expect does: every alive
// server gossip knows, when there are at least expect of them, none
// already belongs to a cluster and all expect the same number. ok is false
// while that does not hold; err says why it never will.
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
		voters = append(voters, Voter{ID: m.Name, Address: m.RaftAddr})
	}
	if len(voters) < expect {
		return nil, false, nil
	}
	slices.SortFunc(voters, func(a, b Voter) int { return strings.Compare(a.ID, b.ID) })
	return voters, true, nil
}
