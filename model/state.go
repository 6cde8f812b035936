package model

import (
	"maps"
	"slices"
	"strings"
)

// CheckKey identifies a check: check IDs are unique per node only.
type CheckKey struct {
	Node    string
	CheckID string
}

// ServiceKey identifies a service instance: service IDs are unique per node only.
type ServiceKey struct {
	Node      string
	ServiceID string
}

// TableIndexes are the highest index at which each table changed. Blocking
// queries wait on them (S45, S46).
type TableIndexes struct {
	Nodes    uint64
	Services uint64
	Checks   uint64
	Sessions uint64
	Queries  uint64
	// KV includes deletions, so a missing key's index moves when it is deleted.
	KV uint64
	// The ACL tables (S87); a bootstrap moves ACLTokens.
	ACLTokens   uint64
	ACLPolicies uint64
	ACLRoles    uint64
	// Coordinates moves when a coordinate is stored or dropped (S89).
	Coordinates uint64
}

// State is the whole replicated state. Use New; the zero value is not usable.
type State struct {
	nodes map[string]Node
	// nodeFold indexes nodes by lower-cased name (S62): each entry lists,
	// sorted, the keys whose names differ only in case. One key each,
	// except in a state restored from before names ignored case. The
	// slices are replaced, never changed, so clones may share them.
	nodeFold map[string][]string
	// nodeIDs indexes nodes by lower-cased node ID (S62), for renames.
	nodeIDs  map[string]string
	services map[ServiceKey]Service
	checks   map[CheckKey]Check
	sessions map[string]Session
	queries  map[string]PreparedQuery
	kv       map[string]KVEntry
	// Tombstones records the index at which each deleted key was deleted.
	tombstones map[string]uint64
	// LockIssued is the highest LockIndex ever issued per key. It outlives the
	// key, so a re-created key never reissues a sequencer (S41).
	lockIssued map[string]uint64
	// DelayedAt is the index of the last invalidation that armed a
	// lock-delay on each key; it lets the FSM refuse a lock whose leader-side
	// lock-delay check predates that invalidation (S22).
	delayedAt map[string]uint64
	// LockFloor is the highest LockIndex issued to any key whose record a
	// reap removed. A key with no record starts above it, so reaping never
	// lets a (Key, LockIndex) pair be issued twice (S52).
	lockFloor uint64
	// ReapedThrough is the highest deletion index a reap removed. Prefix
	// indexes never fall below it, so reaping never moves an index back (S52).
	reapedThrough uint64
	// The ACL tables (acl.go). aclSecrets indexes tokens by SecretID; it is
	// derived from aclTokens and rebuilt on restore.
	aclTokens         map[string]ACLToken
	aclSecrets        map[string]string
	aclPolicies       map[string]ACLPolicy
	aclRoles          map[string]ACLRole
	aclBootstrapIndex uint64
	// coords are the nodes' network coordinates (coordinate.go, S89).
	coords map[CoordKey]Coord
	tables TableIndexes
}

// New returns an empty state.
func New() *State {
	return &State{
		nodes:      map[string]Node{},
		nodeFold:   map[string][]string{},
		nodeIDs:    map[string]string{},
		services:   map[ServiceKey]Service{},
		checks:     map[CheckKey]Check{},
		sessions:   map[string]Session{},
		queries:    map[string]PreparedQuery{},
		kv:         map[string]KVEntry{},
		tombstones: map[string]uint64{},
		lockIssued: map[string]uint64{},
		delayedAt:  map[string]uint64{},

		aclTokens:   map[string]ACLToken{},
		aclSecrets:  map[string]string{},
		aclPolicies: map[string]ACLPolicy{},
		aclRoles:    map[string]ACLRole{},
		coords:      map[CoordKey]Coord{},
	}
}

// Index is the highest index at which anything changed.
func (s *State) Index() uint64 {
	t := s.tables
	return max(t.Nodes, t.Services, t.Checks, t.Sessions, t.Queries, t.KV, t.ACLTokens, t.ACLPolicies, t.ACLRoles, t.Coordinates)
}

// Clone returns an independent copy. Byte slices, lists and meta maps
// inside records are shared: the model never mutates them in place.
func (s *State) Clone() *State {
	return &State{
		nodes:         maps.Clone(s.nodes),
		nodeFold:      maps.Clone(s.nodeFold),
		nodeIDs:       maps.Clone(s.nodeIDs),
		services:      maps.Clone(s.services),
		checks:        maps.Clone(s.checks),
		sessions:      maps.Clone(s.sessions),
		queries:       maps.Clone(s.queries),
		kv:            maps.Clone(s.kv),
		tombstones:    maps.Clone(s.tombstones),
		lockIssued:    maps.Clone(s.lockIssued),
		delayedAt:     maps.Clone(s.delayedAt),
		lockFloor:     s.lockFloor,
		reapedThrough: s.reapedThrough,

		aclTokens:         maps.Clone(s.aclTokens),
		aclSecrets:        maps.Clone(s.aclSecrets),
		aclPolicies:       maps.Clone(s.aclPolicies),
		aclRoles:          maps.Clone(s.aclRoles),
		aclBootstrapIndex: s.aclBootstrapIndex,
		coords:            maps.Clone(s.coords),
		tables:            s.tables,
	}
}

// CloneSince is Clone for a caller that keeps a copy after every applied
// entry (the simulator's observer, through the FSM): prev must be an
// earlier copy of this state (Clone or CloneSince) that no one changes,
// with only Apply used on this state since. A table whose index has not
// moved since prev has not changed (every write moves its table's index,
// and a rolled-back one restores both), so the copy shares it with prev
// and copies only what moved: one entry usually changes one or two of the
// tables, and copying all of them per entry was a large share of a
// simulated run's time. The key records beside the KV table (tombstones,
// lock watermarks, lock-delay marks) also change when a reap removes them,
// which moves ReapedThrough or LockFloor instead.
func (s *State) CloneSince(prev *State) *State {
	t, p := s.tables, prev.tables
	records := t.KV == p.KV && s.lockFloor == prev.lockFloor && s.reapedThrough == prev.reapedThrough
	return &State{
		nodes:         since(t.Nodes == p.Nodes, prev.nodes, s.nodes),
		nodeFold:      since(t.Nodes == p.Nodes, prev.nodeFold, s.nodeFold),
		nodeIDs:       since(t.Nodes == p.Nodes, prev.nodeIDs, s.nodeIDs),
		services:      since(t.Services == p.Services, prev.services, s.services),
		checks:        since(t.Checks == p.Checks, prev.checks, s.checks),
		sessions:      since(t.Sessions == p.Sessions, prev.sessions, s.sessions),
		queries:       since(t.Queries == p.Queries, prev.queries, s.queries),
		kv:            since(t.KV == p.KV, prev.kv, s.kv),
		tombstones:    since(records, prev.tombstones, s.tombstones),
		lockIssued:    since(records, prev.lockIssued, s.lockIssued),
		delayedAt:     since(records, prev.delayedAt, s.delayedAt),
		lockFloor:     s.lockFloor,
		reapedThrough: s.reapedThrough,

		aclTokens:         since(t.ACLTokens == p.ACLTokens, prev.aclTokens, s.aclTokens),
		aclSecrets:        since(t.ACLTokens == p.ACLTokens, prev.aclSecrets, s.aclSecrets),
		aclPolicies:       since(t.ACLPolicies == p.ACLPolicies, prev.aclPolicies, s.aclPolicies),
		aclRoles:          since(t.ACLRoles == p.ACLRoles, prev.aclRoles, s.aclRoles),
		aclBootstrapIndex: s.aclBootstrapIndex,
		coords:            since(t.Coordinates == p.Coordinates, prev.coords, s.coords),
		tables:            s.tables,
	}
}

// since is prev's table if unchanged, else a copy of the current one.
func since[M ~map[K]V, K comparable, V any](unchanged bool, prev, cur M) M {
	if unchanged {
		return prev
	}
	return maps.Clone(cur)
}

// Equal reports whether two states are identical.
func (s *State) Equal(o *State) bool {
	return s.tables == o.tables && s.lockFloor == o.lockFloor && s.reapedThrough == o.reapedThrough &&
		maps.EqualFunc(s.nodes, o.nodes, nodeEqual) &&
		maps.EqualFunc(s.services, o.services, serviceEqual) &&
		maps.Equal(s.checks, o.checks) &&
		maps.EqualFunc(s.sessions, o.sessions, sessionEqual) &&
		maps.EqualFunc(s.queries, o.queries, queryEqual) &&
		maps.EqualFunc(s.kv, o.kv, entryEqual) &&
		maps.Equal(s.tombstones, o.tombstones) &&
		maps.Equal(s.lockIssued, o.lockIssued) &&
		maps.Equal(s.delayedAt, o.delayedAt) &&
		maps.EqualFunc(s.aclTokens, o.aclTokens, aclTokenEqual) &&
		maps.Equal(s.aclSecrets, o.aclSecrets) &&
		maps.EqualFunc(s.aclPolicies, o.aclPolicies, aclPolicyEqual) &&
		maps.EqualFunc(s.aclRoles, o.aclRoles, aclRoleEqual) &&
		s.aclBootstrapIndex == o.aclBootstrapIndex &&
		maps.EqualFunc(s.coords, o.coords, coordEqual)
}

func sessionEqual(a, b Session) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Node == b.Node &&
		slices.Equal(a.Checks, b.Checks) && slices.Equal(a.NodeChecks, b.NodeChecks) &&
		slices.Equal(a.ServiceChecks, b.ServiceChecks) && a.LockDelay == b.LockDelay &&
		a.Behavior == b.Behavior && a.TTL == b.TTL &&
		a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

func serviceEqual(a, b Service) bool {
	return a.Node == b.Node && a.ServiceID == b.ServiceID && a.Service == b.Service &&
		slices.Equal(a.Tags, b.Tags) && a.Address == b.Address && a.Port == b.Port &&
		maps.Equal(a.Meta, b.Meta) && a.ServiceDetails.Equal(b.ServiceDetails) &&
		a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

func queryEqual(a, b PreparedQuery) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Session == b.Session && a.Token == b.Token &&
		serviceQueryEqual(a.Service, b.Service) && a.DNS == b.DNS &&
		a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

func serviceQueryEqual(a, b ServiceQuery) bool {
	return a.Service == b.Service && a.Failover.NearestN == b.Failover.NearestN &&
		slices.Equal(a.Failover.Datacenters, b.Failover.Datacenters) &&
		slices.Equal(a.Failover.Targets, b.Failover.Targets) &&
		a.OnlyPassing == b.OnlyPassing && slices.Equal(a.IgnoreCheckIDs, b.IgnoreCheckIDs) &&
		a.Near == b.Near && slices.Equal(a.Tags, b.Tags) &&
		maps.Equal(a.NodeMeta, b.NodeMeta) && maps.Equal(a.ServiceMeta, b.ServiceMeta)
}

func entryEqual(a, b KVEntry) bool {
	return a.Key == b.Key && string(a.Value) == string(b.Value) && a.Flags == b.Flags &&
		a.LockIndex == b.LockIndex && a.Session == b.Session &&
		a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

// Get returns a key's entry.
func (s *State) Get(key string) (KVEntry, bool) {
	e, ok := s.kv[key]
	return e, ok
}

// List returns the entries whose key starts with prefix, sorted by key.
func (s *State) List(prefix string) []KVEntry {
	var out []KVEntry
	for _, k := range sortedKeys(s.kv) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, s.kv[k])
		}
	}
	return out
}

// Keys lists keys under prefix, sorted. With a separator, keys are cut after
// the first separator past the prefix and deduplicated, as Consul's ?keys does.
func (s *State) Keys(prefix, separator string) []string {
	var out []string
	for _, k := range sortedKeys(s.kv) {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if separator != "" {
			if i := strings.Index(k[len(prefix):], separator); i >= 0 {
				k = k[:len(prefix)+i+len(separator)]
			}
		}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// KeyIndex is the blocking-query index of a single-key read: the key's
// ModifyIndex, or the KV table index when it is missing (S45).
func (s *State) KeyIndex(key string) uint64 {
	if e, ok := s.kv[key]; ok {
		return e.ModifyIndex
	}
	return s.tables.KV
}

// PrefixIndex is the blocking-query index of a prefix read: the highest
// ModifyIndex or deletion under the prefix, else the KV table index (S45).
// Once a reap has removed deletions, a prefix with anything under it never
// answers below ReapedThrough: the deletion it reported may be gone (S52).
func (s *State) PrefixIndex(prefix string) uint64 {
	var idx uint64
	for k, e := range s.kv {
		if strings.HasPrefix(k, prefix) {
			idx = max(idx, e.ModifyIndex)
		}
	}
	for k, at := range s.tombstones {
		if strings.HasPrefix(k, prefix) {
			idx = max(idx, at)
		}
	}
	if idx == 0 {
		return s.tables.KV
	}
	return max(idx, s.reapedThrough)
}

// Session returns a session by ID.
func (s *State) Session(id string) (Session, bool) {
	se, ok := s.sessions[id]
	return se, ok
}

// SessionList returns every session sorted by ID, or those on node if node != "".
func (s *State) SessionList(node string) []Session {
	node = s.nodeKey(node)
	var out []Session
	for _, id := range sortedKeys(s.sessions) {
		if se := s.sessions[id]; node == "" || se.Node == node {
			out = append(out, se)
		}
	}
	return out
}

// NodeList returns every node sorted by name.
func (s *State) NodeList() []Node {
	var out []Node
	for _, n := range sortedKeys(s.nodes) {
		out = append(out, s.nodes[n])
	}
	return out
}

// CheckList returns the checks of node (all nodes if ""), and only those in
// status (any if ""), sorted by node then check ID.
func (s *State) CheckList(node string, status Health) []Check {
	node = s.nodeKey(node)
	var out []Check
	for _, c := range s.checks {
		if (node == "" || c.Node == node) && (status == "" || c.Status == status) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Check) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.CheckID, b.CheckID)
	})
	return out
}

// HeldBy lists the keys the session holds, sorted.
func (s *State) HeldBy(session string) []string {
	var out []string
	for k, e := range s.kv {
		if e.Session == session {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
