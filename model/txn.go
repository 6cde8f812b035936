package model

import (
	"maps"
	"slices"
)

// txn applies all ops or none (S44). As Consul does, it first vets every
// op that is not KV (its verb, a node's name and ID, a service's name and
// address): if any fails, those failures alone are reported and no op
// runs. Then every op runs and every failing op is reported; the state is
// then rolled back to its pre-image.
func (a *applier) txn(t Txn) {
	if len(t.Ops) > MaxTxnOps {
		a.fail(errorf(ErrTooLarge, "Transaction contains too many operations (%d > %d)", len(t.Ops), MaxTxnOps))
		return
	}
	if !t.kvOnly() {
		// Vetting fills in defaults; the caller's command stays as it was.
		t.Ops = slices.Clone(t.Ops)
	}
	for i := range t.Ops {
		if what := vetTxnOp(&t.Ops[i]); what != "" {
			a.res.TxnErrors = append(a.res.TxnErrors, TxnError{OpIndex: i, What: what})
		}
	}
	if len(a.res.TxnErrors) > 0 {
		return
	}
	a.undo = newUndoLog(a.s, t)
	var results []TxnResult
	for i, op := range t.Ops {
		out := a.txnOp(op)
		switch {
		case out.err != nil:
			a.res.TxnErrors = append(a.res.TxnErrors, TxnError{OpIndex: i, What: out.err.Msg})
		case !out.ok:
			a.res.TxnErrors = append(a.res.TxnErrors, TxnError{OpIndex: i, What: out.reason})
			if out.delayed {
				a.res.DelayRefused = append(a.res.DelayRefused, op.KV.Key)
			}
		default:
			for j := range out.entries {
				results = append(results, TxnResult{KV: &out.entries[j]})
			}
			if out.record.KV != nil || out.record.Node != nil || out.record.Service != nil || out.record.Check != nil {
				results = append(results, out.record)
			}
		}
	}
	if len(a.res.TxnErrors) > 0 {
		a.undo.rollback(a.s)
		// What the aborted ops invalidated never happened.
		a.res.Invalidated, a.res.QueriesDeleted, a.res.LockDelays = nil, nil, nil
		a.touched = nil
		return
	}
	a.res.TxnResults = results
}

// kvOnly reports whether every op is a KV op.
func (t Txn) kvOnly() bool {
	for _, op := range t.Ops {
		if op.KV == nil {
			return false
		}
	}
	return true
}

// txnOp runs one op of a transaction.
func (a *applier) txnOp(op TxnOp) kvOutcome {
	switch {
	case op.KV != nil:
		if !op.KV.Verb.IsWrite() && !readVerbs[op.KV.Verb] {
			return kvOutcome{reason: "unknown KV verb \"" + string(op.KV.Verb) + "\""}
		}
		return a.kvOp(*op.KV)
	case op.Node != nil:
		return a.nodeOp(*op.Node)
	case op.Service != nil:
		return a.serviceOp(*op.Service)
	case op.Check != nil:
		return a.checkOp(*op.Check)
	case op.Session != nil:
		return a.sessionOp(*op.Session)
	}
	return refused("unknown operation type")
}

// undoLog restores what a failed transaction changed. KV keys are saved one
// by one as the transaction first touches them, since a transaction names
// few of many keys. A transaction with a catalog or session op also copies
// the catalog, session and query tables whole before it starts: such an op
// reaches across tables (a node delete removes services, checks, sessions
// and their queries, and releases or deletes keys through the KV path,
// which saves them), and these tables are small next to the KV store.
// A nil *undoLog records nothing: only transactions can abort half-way.
type undoLog struct {
	tables TableIndexes
	keys   map[string]keyImage
	others *otherTables
}

// otherTables are the State's tables besides the KV store and its per-key
// records.
type otherTables struct {
	nodes    map[string]Node
	nodeFold map[string][]string
	nodeIDs  map[string]string
	services map[ServiceKey]Service
	checks   map[CheckKey]Check
	sessions map[string]Session
	queries  map[string]PreparedQuery
	coords   map[CoordKey]Coord
}

func newUndoLog(s *State, t Txn) *undoLog {
	u := &undoLog{tables: s.tables}
	if !t.kvOnly() {
		u.others = &otherTables{nodes: maps.Clone(s.nodes), nodeFold: maps.Clone(s.nodeFold),
			nodeIDs: maps.Clone(s.nodeIDs), services: maps.Clone(s.services), checks: maps.Clone(s.checks),
			sessions: maps.Clone(s.sessions), queries: maps.Clone(s.queries), coords: maps.Clone(s.coords)}
	}
	return u
}

type keyImage struct {
	entry     KVEntry
	hasEntry  bool
	tombstone uint64
	hasTomb   bool
	issued    uint64
	hasIssued bool
	delayed   uint64
	hasDelay  bool
}

func (u *undoLog) saveKey(s *State, key string) {
	if u == nil {
		return
	}
	if u.keys == nil {
		u.keys = map[string]keyImage{}
	}
	if _, saved := u.keys[key]; saved {
		return
	}
	var img keyImage
	img.entry, img.hasEntry = s.kv[key]
	img.tombstone, img.hasTomb = s.tombstones[key]
	img.issued, img.hasIssued = s.lockIssued[key]
	img.delayed, img.hasDelay = s.delayedAt[key]
	u.keys[key] = img
}

func (u *undoLog) rollback(s *State) {
	for key, img := range u.keys {
		restore(s.kv, key, img.entry, img.hasEntry)
		restore(s.tombstones, key, img.tombstone, img.hasTomb)
		restore(s.lockIssued, key, img.issued, img.hasIssued)
		restore(s.delayedAt, key, img.delayed, img.hasDelay)
	}
	if o := u.others; o != nil {
		s.nodes, s.nodeFold, s.nodeIDs = o.nodes, o.nodeFold, o.nodeIDs
		s.services, s.checks, s.sessions, s.queries = o.services, o.checks, o.sessions, o.queries
		s.coords = o.coords
	}
	s.tables = u.tables
}

func restore[V any](m map[string]V, key string, v V, present bool) {
	if present {
		m[key] = v
	} else {
		delete(m, key)
	}
}
