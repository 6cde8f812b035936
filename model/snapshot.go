package model

import (
	"fmt"
	"maps"
	"strings"
)

// Snapshot is a State as plain data: what a raft snapshot stores, and what a
// test edits when it builds a broken state on purpose. It shares nothing
// with the State it came from.
type Snapshot struct {
	Nodes    map[string]Node
	Services map[ServiceKey]Service
	Checks   map[CheckKey]Check
	Sessions map[string]Session
	Queries  map[string]PreparedQuery
	KV       map[string]KVEntry
	// Tombstones, LockIssued and DelayedAt are per key, as in State: the
	// index of the key's deletion, the highest LockIndex it was issued
	// (S41) and the index of the invalidation that last armed its
	// lock-delay (S22).
	Tombstones map[string]uint64
	LockIssued map[string]uint64
	DelayedAt  map[string]uint64
	// LockFloor and ReapedThrough are what reaping left behind (S52).
	LockFloor     uint64
	ReapedThrough uint64
	// The ACL tables (S87) and the index of the last bootstrap.
	ACLTokens         map[string]ACLToken
	ACLPolicies       map[string]ACLPolicy
	ACLRoles          map[string]ACLRole
	ACLBootstrapIndex uint64
	// Coordinates are the nodes' network coordinates (S89).
	Coordinates map[CoordKey]Coord
	Tables      TableIndexes
}

// Snapshot copies the state out as plain data.
func (s *State) Snapshot() Snapshot {
	c := s.Clone()
	return Snapshot{
		Nodes: c.nodes, Services: c.services, Checks: c.checks, Sessions: c.sessions,
		Queries: c.queries, KV: c.kv,
		Tombstones: c.tombstones, LockIssued: c.lockIssued, DelayedAt: c.delayedAt,
		LockFloor: c.lockFloor, ReapedThrough: c.reapedThrough, Tables: c.tables,
		ACLTokens: c.aclTokens, ACLPolicies: c.aclPolicies, ACLRoles: c.aclRoles,
		ACLBootstrapIndex: c.aclBootstrapIndex, Coordinates: c.coords,
	}
}

// Restore rebuilds a State from a snapshot, refusing one that names a record
// under another record's key or breaks an invariant: a snapshot read from
// disk or the network is input, not trusted state.
func Restore(snap Snapshot) (*State, error) {
	for name, n := range snap.Nodes {
		if n.Name != name {
			return nil, fmt.Errorf("restore: node %q stored under %q", n.Name, name)
		}
	}
	for k, sv := range snap.Services {
		if (ServiceKey{Node: sv.Node, ServiceID: sv.ServiceID}) != k {
			return nil, fmt.Errorf("restore: service %s/%s stored under %s/%s", sv.Node, sv.ServiceID, k.Node, k.ServiceID)
		}
	}
	for k, c := range snap.Checks {
		if (CheckKey{Node: c.Node, CheckID: c.CheckID}) != k {
			return nil, fmt.Errorf("restore: check %s/%s stored under %s/%s", c.Node, c.CheckID, k.Node, k.CheckID)
		}
	}
	for id, se := range snap.Sessions {
		if se.ID != id {
			return nil, fmt.Errorf("restore: session %q stored under %q", se.ID, id)
		}
	}
	for id, q := range snap.Queries {
		if q.ID != id {
			return nil, fmt.Errorf("restore: prepared query %q stored under %q", q.ID, id)
		}
	}
	for key, e := range snap.KV {
		if e.Key != key {
			return nil, fmt.Errorf("restore: key %q stored under %q", e.Key, key)
		}
	}
	for id, t := range snap.ACLTokens {
		if t.AccessorID != id {
			return nil, fmt.Errorf("restore: ACL token %q stored under %q", t.AccessorID, id)
		}
	}
	for id, p := range snap.ACLPolicies {
		if p.ID != id {
			return nil, fmt.Errorf("restore: ACL policy %q stored under %q", p.ID, id)
		}
	}
	for id, r := range snap.ACLRoles {
		if r.ID != id {
			return nil, fmt.Errorf("restore: ACL role %q stored under %q", r.ID, id)
		}
	}
	for k, c := range snap.Coordinates {
		if !c.Valid() {
			return nil, fmt.Errorf("restore: coordinate of %s/%q is not a finite vector of 1 to %d dimensions", k.Node, k.Segment, MaxCoordinateDims)
		}
	}
	s := RestoreUnchecked(snap)
	if err := s.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return s, nil
}

// RestoreUnchecked rebuilds a State from a snapshot as it is, however broken.
// It is for tests that must show a checker rejects a bad state, and for
// tools that renumber a state they then only compare; servers use Restore.
func RestoreUnchecked(snap Snapshot) *State {
	s := New()
	maps.Copy(s.nodes, snap.Nodes)
	for _, key := range sortedKeys(s.nodes) {
		s.foldNode(key)
		if id := strings.ToLower(s.nodes[key].ID); id != "" {
			if _, taken := s.nodeIDs[id]; !taken { // the least key, should a bad snapshot repeat an ID
				s.nodeIDs[id] = key
			}
		}
	}
	maps.Copy(s.services, snap.Services)
	maps.Copy(s.checks, snap.Checks)
	maps.Copy(s.sessions, snap.Sessions)
	maps.Copy(s.queries, snap.Queries)
	maps.Copy(s.kv, snap.KV)
	maps.Copy(s.tombstones, snap.Tombstones)
	maps.Copy(s.lockIssued, snap.LockIssued)
	maps.Copy(s.delayedAt, snap.DelayedAt)
	s.lockFloor, s.reapedThrough, s.tables = snap.LockFloor, snap.ReapedThrough, snap.Tables
	maps.Copy(s.aclTokens, snap.ACLTokens)
	for _, id := range sortedKeys(s.aclTokens) {
		if secret := s.aclTokens[id].SecretID; s.aclSecrets[secret] == "" { // the least accessor, should a bad snapshot repeat a secret
			s.aclSecrets[secret] = id
		}
	}
	maps.Copy(s.aclPolicies, snap.ACLPolicies)
	maps.Copy(s.aclRoles, snap.ACLRoles)
	s.aclBootstrapIndex = snap.ACLBootstrapIndex
	maps.Copy(s.coords, snap.Coordinates)
	return s
}
