package model

import "iter"

// Read accessors for what State records beside nodes, checks, sessions and
// keys. State's fields are unexported so that Apply (and Reap) stay the only
// mutators; everything else reads through these.

// Node returns a node by name, compared ignoring case (S62).
func (s *State) Node(name string) (Node, bool) {
	n, ok := s.nodes[s.nodeKey(name)]
	return n, ok
}

// Check returns a check by node (compared ignoring case) and ID.
func (s *State) Check(key CheckKey) (Check, bool) {
	key.Node = s.nodeKey(key.Node)
	c, ok := s.checks[key]
	return c, ok
}

// Tombstone returns the index at which key was deleted, while the deletion
// is remembered (S45, S52).
func (s *State) Tombstone(key string) (uint64, bool) {
	at, ok := s.tombstones[key]
	return at, ok
}

// LockIssued is the highest LockIndex ever issued for key while its record
// is kept (S41); 0 when none is recorded.
func (s *State) LockIssued(key string) uint64 { return s.lockIssued[key] }

// DelayedAt returns the index of the invalidation that last armed key's
// lock-delay (S22).
func (s *State) DelayedAt(key string) (uint64, bool) {
	at, ok := s.delayedAt[key]
	return at, ok
}

// LockFloor is the highest LockIndex of any key whose record a reap removed
// (S52).
func (s *State) LockFloor() uint64 { return s.lockFloor }

// ReapedThrough is the highest deletion index a reap removed (S52).
func (s *State) ReapedThrough() uint64 { return s.reapedThrough }

// Tables are the per-table indexes blocking queries wait on (S45, S46).
func (s *State) Tables() TableIndexes { return s.tables }

// Sessions yields every session, in no particular order.
func (s *State) Sessions() iter.Seq2[string, Session] {
	return func(yield func(string, Session) bool) {
		for id, se := range s.sessions {
			if !yield(id, se) {
				return
			}
		}
	}
}

// Entries yields every live key and its entry, in no particular order.
func (s *State) Entries() iter.Seq2[string, KVEntry] {
	return func(yield func(string, KVEntry) bool) {
		for k, e := range s.kv {
			if !yield(k, e) {
				return
			}
		}
	}
}

// Tombstones yields every remembered deletion, in no particular order.
func (s *State) Tombstones() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		for k, at := range s.tombstones {
			if !yield(k, at) {
				return
			}
		}
	}
}

// Nodes yields every node, in no particular order: NodeList without the
// sorted copy, for callers that look at every node per applied entry.
func (s *State) Nodes() iter.Seq2[string, Node] {
	return func(yield func(string, Node) bool) {
		for name, n := range s.nodes {
			if !yield(name, n) {
				return
			}
		}
	}
}

// Checks yields every check, in no particular order.
func (s *State) Checks() iter.Seq2[CheckKey, Check] {
	return func(yield func(CheckKey, Check) bool) {
		for k, c := range s.checks {
			if !yield(k, c) {
				return
			}
		}
	}
}

// Queries yields every prepared query, in no particular order.
func (s *State) Queries() iter.Seq2[string, PreparedQuery] {
	return func(yield func(string, PreparedQuery) bool) {
		for id, q := range s.queries {
			if !yield(id, q) {
				return
			}
		}
	}
}

// Counts are the sizes of the state's tables.
func (s *State) Counts() (nodes, checks, sessions, keys, tombstones int) {
	return len(s.nodes), len(s.checks), len(s.sessions), len(s.kv), len(s.tombstones)
}

// KeyIndexes are the indexes a state records for one key; 0 where none.
type KeyIndexes struct {
	Create, Modify uint64 // the live entry's
	Deleted        uint64 // its tombstone's
	DelayedAt      uint64 // the invalidation that armed its lock-delay
}

// Renumber is for checkers that compare states up to a renaming of indexes,
// so that states reached by commuting steps in either order are equal. It
// zeroes the indexes of nodes, services, checks, sessions, queries and ACL
// records, which such checkers never compare (the ACL bootstrap index, which
// decides whether a bootstrap may run, is kept), and hands rename every key that has an entry, tombstone or
// lock-delay mark; rename returns the key's new indexes. The KV table index
// becomes kvIndex, which the caller sets above every new index it gave out,
// so that the next Apply still numbers above them. The caller must keep
// each key's indexes in their order; nothing here checks that.
func (s *State) Renumber(rename func(key string, ix KeyIndexes) KeyIndexes, kvIndex func() uint64) {
	for id, se := range s.sessions {
		if se.CreateIndex|se.ModifyIndex != 0 {
			se.CreateIndex, se.ModifyIndex = 0, 0
			s.sessions[id] = se
		}
	}
	for n, nd := range s.nodes {
		if nd.CreateIndex|nd.ModifyIndex != 0 {
			nd.CreateIndex, nd.ModifyIndex = 0, 0
			s.nodes[n] = nd
		}
	}
	for k, ch := range s.checks {
		if ch.CreateIndex|ch.ModifyIndex != 0 {
			ch.CreateIndex, ch.ModifyIndex = 0, 0
			s.checks[k] = ch
		}
	}
	for k, sv := range s.services {
		if sv.CreateIndex|sv.ModifyIndex != 0 {
			sv.CreateIndex, sv.ModifyIndex = 0, 0
			s.services[k] = sv
		}
	}
	for id, q := range s.queries {
		if q.CreateIndex|q.ModifyIndex != 0 {
			q.CreateIndex, q.ModifyIndex = 0, 0
			s.queries[id] = q
		}
	}
	s.renumberACL()
	one := func(k string) {
		e, live := s.kv[k]
		deleted, tomb := s.tombstones[k]
		delayed, marked := s.delayedAt[k]
		ix := rename(k, KeyIndexes{Create: e.CreateIndex, Modify: e.ModifyIndex, Deleted: deleted, DelayedAt: delayed})
		if live {
			e.CreateIndex, e.ModifyIndex = ix.Create, ix.Modify
			s.kv[k] = e
		}
		if tomb {
			s.tombstones[k] = ix.Deleted
		}
		if marked {
			s.delayedAt[k] = ix.DelayedAt
		}
	}
	for k := range s.kv {
		one(k)
	}
	for k := range s.tombstones {
		if _, live := s.kv[k]; !live {
			one(k)
		}
	}
	for k := range s.delayedAt {
		_, live := s.kv[k]
		_, tomb := s.tombstones[k]
		if !live && !tomb {
			one(k)
		}
	}
	s.tables = TableIndexes{KV: kvIndex()}
}

// renumberACL zeroes the ACL records' indexes for Renumber.
func (s *State) renumberACL() {
	for id, t := range s.aclTokens {
		t.CreateIndex, t.ModifyIndex = 0, 0
		s.aclTokens[id] = t
	}
	for id, p := range s.aclPolicies {
		p.CreateIndex, p.ModifyIndex = 0, 0
		s.aclPolicies[id] = p
	}
	for id, r := range s.aclRoles {
		r.CreateIndex, r.ModifyIndex = 0, 0
		s.aclRoles[id] = r
	}
}
