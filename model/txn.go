package model

// txn applies all ops or none (S44). Every failing op is reported, as Consul
// does, and the state is then rolled back to its pre-image.
func (a *applier) txn(t Txn) {
	if len(t.Ops) > MaxTxnOps {
		a.fail(errorf(ErrTooLarge, "Transaction contains too many operations (%d > %d)", len(t.Ops), MaxTxnOps))
		return
	}
	a.undo = &undoLog{tables: a.s.tables}
	var results []KVEntry
	for i, op := range t.Ops {
		if !op.Verb.IsWrite() && !readVerbs[op.Verb] {
			a.res.TxnErrors = append(a.res.TxnErrors, TxnError{OpIndex: i, What: "unknown KV verb \"" + string(op.Verb) + "\""})
			continue
		}
		out := a.kvOp(op)
		switch {
		case out.err != nil:
			a.res.TxnErrors = append(a.res.TxnErrors, TxnError{OpIndex: i, What: out.err.Msg})
		case !out.ok:
			a.res.TxnErrors = append(a.res.TxnErrors, TxnError{OpIndex: i, What: out.reason})
			if out.delayed {
				a.res.DelayRefused = append(a.res.DelayRefused, op.Key)
			}
		default:
			results = append(results, out.entries...)
		}
	}
	if len(a.res.TxnErrors) > 0 {
		a.undo.rollback(a.s)
		return
	}
	a.res.TxnResults = results
}

// undoLog keeps the first pre-image of every key a transaction touches.
// A nil *undoLog records nothing: only transactions can abort half-way.
type undoLog struct {
	tables TableIndexes
	keys   map[string]keyImage
}

type keyImage struct {
	entry     KVEntry
	hasEntry  bool
	tombstone uint64
	hasTomb   bool
	issued    uint64
	hasIssued bool
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
	u.keys[key] = img
}

func (u *undoLog) rollback(s *State) {
	for key, img := range u.keys {
		restore(s.kv, key, img.entry, img.hasEntry)
		restore(s.tombstones, key, img.tombstone, img.hasTomb)
		restore(s.lockIssued, key, img.issued, img.hasIssued)
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
