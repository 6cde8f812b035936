package model

import (
	"fmt"
	"slices"
	"strings"
)

// InvariantError names a broken invariant and where it broke.
type InvariantError struct {
	Name   string
	Detail string
}

func (e *InvariantError) Error() string { return e.Name + ": " + e.Detail }

func violated(name, format string, args ...any) error {
	return &InvariantError{Name: name, Detail: fmt.Sprintf(format, args...)}
}

// Invariant names, for tests and for tools that report violations.
const (
	InvHolderExists        = "holder-exists"
	InvIndexBounds         = "index-bounds"
	InvLockIndexIssued     = "lock-index-issued"
	InvSessionNode         = "session-outlives-node"
	InvSessionChecks       = "session-outlives-checks"
	InvCheckNode           = "check-has-node"
	InvServiceNode         = "service-has-node"
	InvNodeIDUnique        = "node-id-unique"
	InvNodeFold            = "node-fold-index"
	InvNodeIDIndex         = "node-id-index"
	InvCheckService        = "check-has-service"
	InvQuerySession        = "query-outlives-session"
	InvTombstone           = "tombstone-not-live"
	InvRejectNoChange      = "rejected-changes-nothing"
	InvIndexAdvances       = "index-advances"
	InvLockIndexMonotonic  = "lock-index-monotonic"
	InvSequencerUnique     = "sequencer-never-reissued"
	InvInvalidationEffects = "invalidation-effects"
	InvSessionImmutable    = "session-immutable"
	InvACLSecretIndex      = "acl-secret-index"
	InvACLNameUnique       = "acl-name-unique"
	InvCoordinateNode      = "coordinate-has-node"
)

// CheckInvariants checks the properties every reachable state has. "At most
// one holder per key" needs no check: an entry has one Session field.
func (s *State) CheckInvariants() error {
	t := s.tables
	for _, name := range sortedKeys(s.kv) {
		e := s.kv[name]
		switch {
		case e.Key != name:
			return violated(InvIndexBounds, "entry stored under %q names key %q", name, e.Key)
		case e.CreateIndex == 0 || e.CreateIndex > e.ModifyIndex || e.ModifyIndex > t.KV:
			return violated(InvIndexBounds, "key %q: CreateIndex %d, ModifyIndex %d, KV table %d", name, e.CreateIndex, e.ModifyIndex, t.KV)
		case e.LockIndex > s.lockIssued[name]:
			return violated(InvLockIndexIssued, "key %q has LockIndex %d above the highest issued %d", name, e.LockIndex, s.lockIssued[name])
		case e.Session != "" && e.LockIndex == 0:
			return violated(InvLockIndexIssued, "key %q is held with LockIndex 0", name)
		}
		if _, ok := s.tombstones[name]; ok {
			return violated(InvTombstone, "key %q is both live and tombstoned", name)
		}
		if e.Session != "" {
			if _, ok := s.sessions[e.Session]; !ok {
				return violated(InvHolderExists, "key %q is held by missing session %q", name, e.Session)
			}
		}
	}
	for _, name := range sortedKeys(s.tombstones) {
		if at := s.tombstones[name]; at == 0 || at > t.KV {
			return violated(InvIndexBounds, "tombstone %q at %d, KV table %d", name, at, t.KV)
		}
	}
	for _, name := range sortedKeys(s.delayedAt) {
		if at := s.delayedAt[name]; at == 0 || at > t.KV {
			return violated(InvIndexBounds, "lock-delay record %q at %d, KV table %d", name, at, t.KV)
		}
	}
	idOwner := map[string]string{}
	for _, name := range sortedKeys(s.nodes) {
		n := s.nodes[name]
		if n.Name != name || n.CreateIndex == 0 || n.CreateIndex > n.ModifyIndex || n.ModifyIndex > t.Nodes {
			return violated(InvIndexBounds, "node %q: CreateIndex %d, ModifyIndex %d, nodes table %d", name, n.CreateIndex, n.ModifyIndex, t.Nodes)
		}
		if n.ID == "" {
			continue
		}
		id := strings.ToLower(n.ID)
		if other, ok := idOwner[id]; ok {
			return violated(InvNodeIDUnique, "nodes %q and %q both carry ID %s", other, name, n.ID)
		}
		idOwner[id] = name
	}
	if err := s.checkNodeFold(); err != nil {
		return err
	}
	if err := s.checkNodeIDs(); err != nil {
		return err
	}
	for _, sv := range s.ServiceList("") {
		if _, ok := s.nodes[sv.Node]; !ok {
			return violated(InvServiceNode, "service %q is on missing node %q", sv.ServiceID, sv.Node)
		}
		if sv.CreateIndex == 0 || sv.CreateIndex > sv.ModifyIndex || sv.ModifyIndex > t.Services {
			return violated(InvIndexBounds, "service %s/%s: CreateIndex %d, ModifyIndex %d, services table %d", sv.Node, sv.ServiceID, sv.CreateIndex, sv.ModifyIndex, t.Services)
		}
	}
	for _, c := range s.CheckList("", "") {
		if _, ok := s.nodes[c.Node]; !ok {
			return violated(InvCheckNode, "check %q is on missing node %q", c.CheckID, c.Node)
		}
		if c.ServiceID != "" {
			sv, ok := s.services[ServiceKey{Node: c.Node, ServiceID: c.ServiceID}]
			if !ok {
				return violated(InvCheckService, "check %s/%s outlives its service %q", c.Node, c.CheckID, c.ServiceID)
			}
			if sv.Service != c.ServiceName {
				return violated(InvCheckService, "check %s/%s names service %q, but %q is named %q", c.Node, c.CheckID, c.ServiceName, c.ServiceID, sv.Service)
			}
		} else if c.ServiceName != "" {
			return violated(InvCheckService, "node check %s/%s names service %q", c.Node, c.CheckID, c.ServiceName)
		}
		if c.CreateIndex == 0 || c.CreateIndex > c.ModifyIndex || c.ModifyIndex > t.Checks {
			return violated(InvIndexBounds, "check %s/%s: CreateIndex %d, ModifyIndex %d, checks table %d", c.Node, c.CheckID, c.CreateIndex, c.ModifyIndex, t.Checks)
		}
	}
	for _, c := range s.CoordinateList() {
		if _, ok := s.nodes[c.Node]; !ok {
			return violated(InvCoordinateNode, "coordinate of %q outlives its node", c.Node)
		}
	}
	for _, se := range s.SessionList("") {
		if se.CreateIndex == 0 || se.CreateIndex != se.ModifyIndex || se.ModifyIndex > t.Sessions {
			return violated(InvIndexBounds, "session %q: CreateIndex %d, ModifyIndex %d, sessions table %d", se.ID, se.CreateIndex, se.ModifyIndex, t.Sessions)
		}
		if _, ok := s.nodes[se.Node]; !ok {
			return violated(InvSessionNode, "session %q outlives its node %q", se.ID, se.Node)
		}
		for _, id := range se.CheckIDs() {
			c, ok := s.checks[CheckKey{Node: se.Node, CheckID: id}]
			if !ok {
				return violated(InvSessionChecks, "session %q outlives its check %q", se.ID, id)
			}
			if c.Status == HealthCritical {
				return violated(InvSessionChecks, "session %q outlives its critical check %q", se.ID, id)
			}
		}
	}
	for _, q := range s.QueryList() {
		if q.CreateIndex == 0 || q.CreateIndex > q.ModifyIndex || q.ModifyIndex > t.Queries {
			return violated(InvIndexBounds, "prepared query %q: CreateIndex %d, ModifyIndex %d, queries table %d", q.ID, q.CreateIndex, q.ModifyIndex, t.Queries)
		}
		if q.Session == "" {
			continue
		}
		if _, ok := s.sessions[q.Session]; !ok {
			return violated(InvQuerySession, "prepared query %q outlives its session %q", q.ID, q.Session)
		}
	}
	return s.checkACLInvariants()
}

// checkACLInvariants: records sit within their table's index, the secret
// index maps each token's secret to it and nothing else, and names are
// unique ignoring case (S87).
func (s *State) checkACLInvariants() error {
	t := s.tables
	if s.aclBootstrapIndex > t.ACLTokens {
		return violated(InvIndexBounds, "ACL bootstrap at %d, tokens table %d", s.aclBootstrapIndex, t.ACLTokens)
	}
	for _, id := range sortedKeys(s.aclTokens) {
		tok := s.aclTokens[id]
		switch {
		case tok.AccessorID != id:
			return violated(InvIndexBounds, "ACL token %q stored under %q", tok.AccessorID, id)
		case tok.CreateIndex == 0 || tok.CreateIndex > tok.ModifyIndex || tok.ModifyIndex > t.ACLTokens:
			return violated(InvIndexBounds, "ACL token %q: CreateIndex %d, ModifyIndex %d, tokens table %d", id, tok.CreateIndex, tok.ModifyIndex, t.ACLTokens)
		case s.aclSecrets[tok.SecretID] != id:
			return violated(InvACLSecretIndex, "ACL token %q is not indexed by its secret", id)
		}
	}
	if len(s.aclSecrets) != len(s.aclTokens) {
		return violated(InvACLSecretIndex, "%d secrets indexed for %d tokens", len(s.aclSecrets), len(s.aclTokens))
	}
	names := map[string]string{}
	for _, id := range sortedKeys(s.aclPolicies) {
		p := s.aclPolicies[id]
		if p.CreateIndex == 0 || p.CreateIndex > p.ModifyIndex || p.ModifyIndex > t.ACLPolicies {
			return violated(InvIndexBounds, "ACL policy %q: CreateIndex %d, ModifyIndex %d, policies table %d", id, p.CreateIndex, p.ModifyIndex, t.ACLPolicies)
		}
		if other, dup := names[lowerName(p.Name)]; dup {
			return violated(InvACLNameUnique, "ACL policies %q and %q are both named %q", other, id, p.Name)
		}
		names[lowerName(p.Name)] = id
	}
	names = map[string]string{}
	for _, id := range sortedKeys(s.aclRoles) {
		r := s.aclRoles[id]
		if r.CreateIndex == 0 || r.CreateIndex > r.ModifyIndex || r.ModifyIndex > t.ACLRoles {
			return violated(InvIndexBounds, "ACL role %q: CreateIndex %d, ModifyIndex %d, roles table %d", id, r.CreateIndex, r.ModifyIndex, t.ACLRoles)
		}
		if other, dup := names[lowerName(r.Name)]; dup {
			return violated(InvACLNameUnique, "ACL roles %q and %q are both named %q", other, id, r.Name)
		}
		names[lowerName(r.Name)] = id
	}
	return nil
}

// CheckTransition checks the properties of one step prev → next that res
// reports. prev must be a clone taken before Apply.
func CheckTransition(prev, next *State, res Result) error {
	if res.Failed() {
		if !next.Equal(prev) {
			return violated(InvRejectNoChange, "a rejected command changed the state (%v)", describeFailure(res))
		}
		return nil
	}
	if next.Index() != prev.Index() && next.Index() != res.Index {
		return violated(InvIndexAdvances, "state index moved to %d, command index %d", next.Index(), res.Index)
	}
	for _, key := range sortedKeys(next.kv) {
		e := next.kv[key]
		old, had := prev.kv[key]
		if had && entryEqual(old, e) {
			continue
		}
		if e.ModifyIndex != res.Index || res.Index <= prev.Index() {
			return violated(InvIndexAdvances, "key %q changed with ModifyIndex %d at index %d (previous state index %d)", key, e.ModifyIndex, res.Index, prev.Index())
		}
		if had && e.LockIndex < old.LockIndex {
			return violated(InvLockIndexMonotonic, "key %q LockIndex fell from %d to %d", key, old.LockIndex, e.LockIndex)
		}
		if bound := max(prev.lockIssued[key], prev.lockFloor); e.Session != "" && (!had || old.Sequencer() != e.Sequencer()) && e.LockIndex <= bound {
			return violated(InvSequencerUnique, "key %q issued LockIndex %d to %q, but %d was issued before", key, e.LockIndex, e.Session, bound)
		}
	}
	if next.lockFloor < prev.lockFloor {
		return violated(InvSequencerUnique, "lock floor fell from %d to %d", prev.lockFloor, next.lockFloor)
	}
	for _, key := range sortedKeys(prev.lockIssued) {
		// A reap may drop a deleted key's watermark only into the floor (S52).
		_, live := next.kv[key]
		reaped := !live && next.lockIssued[key] == 0 && next.lockFloor >= prev.lockIssued[key]
		if next.lockIssued[key] < prev.lockIssued[key] && !reaped {
			return violated(InvSequencerUnique, "key %q issued watermark fell from %d to %d", key, prev.lockIssued[key], next.lockIssued[key])
		}
	}
	for _, id := range sortedKeys(prev.queries) {
		q := prev.queries[id]
		if _, kept := next.queries[id]; kept {
			continue
		}
		bySession := q.Session != "" && slices.Contains(res.Invalidated, q.Session)
		if bySession != slices.Contains(res.QueriesDeleted, id) || (!bySession && res.QueryID != id) {
			return violated(InvInvalidationEffects, "prepared query %q vanished without its deletion or its session's invalidation being reported", id)
		}
	}
	for _, id := range sortedKeys(prev.sessions) {
		old := prev.sessions[id]
		cur, alive := next.sessions[id]
		if alive {
			if !sessionEqual(old, cur) {
				return violated(InvSessionImmutable, "session %q changed", id)
			}
			continue
		}
		if !slices.Contains(res.Invalidated, id) {
			return violated(InvInvalidationEffects, "session %q vanished without being reported invalidated", id)
		}
		if err := checkInvalidationEffects(prev, next, old, res.Index); err != nil {
			return err
		}
	}
	return nil
}

// checkInvalidationEffects checks S16/S17 for one invalidated session: every
// key it held was released in place or deleted, at the invalidation index.
func checkInvalidationEffects(prev, next *State, se Session, idx uint64) error {
	for _, key := range prev.HeldBy(se.ID) {
		e, exists := next.kv[key]
		if se.Behavior == BehaviorDelete {
			if exists {
				return violated(InvInvalidationEffects, "delete-behaviour session %q left key %q behind", se.ID, key)
			}
			continue
		}
		old := prev.kv[key]
		switch {
		case !exists:
			return violated(InvInvalidationEffects, "release-behaviour session %q: key %q vanished", se.ID, key)
		case e.Session == se.ID:
			return violated(InvInvalidationEffects, "session %q invalidated but still holds %q", se.ID, key)
		case e.Session == "" && (e.LockIndex != old.LockIndex || e.ModifyIndex != idx || string(e.Value) != string(old.Value) || e.Flags != old.Flags || e.CreateIndex != old.CreateIndex):
			return violated(InvInvalidationEffects, "release of %q by invalidated session %q changed more than Session and ModifyIndex", key, se.ID)
		}
	}
	return nil
}

func describeFailure(res Result) string {
	if res.Err != nil {
		return res.Err.Msg
	}
	return fmt.Sprintf("%d txn errors", len(res.TxnErrors))
}

// checkNodeFold: the index of node names ignoring case (S62) lists every
// node under its lower-cased name, sorted, and nothing else.
func (s *State) checkNodeFold() error {
	listed := 0
	for _, lower := range sortedKeys(s.nodeFold) {
		keys := s.nodeFold[lower]
		if len(keys) == 0 || !slices.IsSorted(keys) {
			return violated(InvNodeFold, "names folding to %q listed as %q", lower, keys)
		}
		for _, k := range keys {
			if _, ok := s.nodes[k]; !ok || strings.ToLower(k) != lower {
				return violated(InvNodeFold, "%q listed under %q is no node of that name", k, lower)
			}
		}
		listed += len(keys)
	}
	if listed != len(s.nodes) {
		return violated(InvNodeFold, "%d nodes, %d listed by name ignoring case", len(s.nodes), listed)
	}
	return nil
}

// checkNodeIDs: the index of node IDs lists every node that has an ID,
// under its lower-cased ID, and nothing else.
func (s *State) checkNodeIDs() error {
	withID := 0
	for _, name := range sortedKeys(s.nodes) {
		if id := s.nodes[name].ID; id != "" {
			withID++
			if s.nodeIDs[strings.ToLower(id)] != name {
				return violated(InvNodeIDIndex, "node %q with ID %s is not indexed by it", name, id)
			}
		}
	}
	if len(s.nodeIDs) != withID {
		return violated(InvNodeIDIndex, "%d nodes have IDs, %d IDs indexed", withID, len(s.nodeIDs))
	}
	return nil
}
