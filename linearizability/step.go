package linearizability

import (
	"maps"
	"math"
	"slices"

	"github.com/tenurekv/tenure/model"
)

// checker holds what every step of one Check needs besides the state.
type checker struct {
	slack int64 // History.LockDelaySlack
	lossy bool  // History.LockDelayMayBeLost
	whole bool  // check unpartitioned
	t0    int64 // the history's first instant, for descriptions
	// known are the session IDs creates returned in the history.
	known map[string]bool
	init  *pstate
}

// step is the partition model's transition: it applies the operation with
// model.State.Apply (or the model's read helpers) and keeps every resulting
// state that agrees with what the client saw. No state means the operation
// cannot be linearized here. An unknown outcome agrees with anything: if
// the operation had no effect, porcupine places it at the end of history.
func (c *checker) step(s *pstate, in stepIn) []*pstate {
	r := in.r
	switch r.kind {
	case kindShared:
		return c.stepShared(s, r)
	case kindKV:
		return c.stepKV(s, r)
	case kindTxn:
		return c.stepTxn(s, r, in.sc)
	default:
		return c.stepRead(s, r, in.sc)
	}
}

// stepShared applies a session or catalog command, or an event. Its
// invalidations arm lock-delay windows measured from the operation's own
// window, as servers arm them at apply (S22).
func (c *checker) stepShared(s *pstate, r *rec) []*pstate {
	ns := s.clone()
	var invalidated []string
	for _, cmd := range r.cmds {
		res := ns.m.Apply(ns.m.Index()+1, cmd)
		if res.Failed() {
			if r.event == nil && (r.unknown || r.out.Error != "") {
				return []*pstate{s}
			}
			return nil // the server did what the model refuses
		}
		invalidated = append(invalidated, res.Invalidated...)
		for _, d := range res.LockDelays {
			c.arm(ns, d, r)
		}
	}
	switch {
	case r.unknown:
	case r.out.Error != "" || !r.out.OK:
		return nil // the server refused what the model accepts
	case r.event != nil && r.event.Invalidated != nil && !c.sameInvalidated(invalidated, r.event.Invalidated):
		return nil
	}
	ns.canon()
	return []*pstate{ns}
}

// sameInvalidated compares the sessions the model invalidated with those
// the server reported. The server may also name sessions the history never
// learned of: creates whose outcome was unknown and which took effect.
func (c *checker) sameInvalidated(model, reported []string) bool {
	for _, id := range model {
		if !slices.Contains(reported, id) {
			return false
		}
	}
	for _, id := range reported {
		if !slices.Contains(model, id) && c.known[id] {
			return false
		}
	}
	return true
}

// arm records a lock-delay of d.Delay armed by r: it ends at least d.Delay
// after r's call and at most d.Delay after its return, widened by the slack.
func (c *checker) arm(ns *pstate, d model.LockDelay, r *rec) {
	t := ns.tr[d.Key]
	t.DelayFrom = max(t.DelayFrom, satAdd(r.call, int64(d.Delay)-c.slack))
	t.DelayTo = max(t.DelayTo, satAdd(satAdd(r.ret, int64(d.Delay)), c.slack))
	ns.tr[d.Key] = t
}

// stepKV applies a stand-alone KV write, once per reading of its index.
func (c *checker) stepKV(s *pstate, r *rec) []*pstate {
	o := *r.cmds[0].KV
	cs := []cand{{local: o.Index}}
	if usesModifyIndex(o) {
		cs = modifyCands(s, o.Key, o.Index)
	}
	var out []*pstate
	for _, cd := range cs {
		if ns := c.stepKVWith(s, r, o, cd); ns != nil {
			out = append(out, ns)
		}
	}
	return out
}

func (c *checker) stepKVWith(s *pstate, r *rec, o model.KVOp, cd cand) *pstate {
	ns := s.clone()
	if cd.pre {
		// modifyCands offers a pre reading only when the key's current
		// version is newer than its newest bound one (a key's local
		// indexes only grow, and canon keeps their order) and the read
		// index is above the bound one, so binding it cannot conflict.
		t := ns.tr[o.Key]
		t.L, t.M = cd.l, cd.m
		ns.tr[o.Key] = t
	}
	o.Index = cd.local
	pre, had := ns.m.Get(o.Key)
	res := ns.m.Apply(ns.m.Index()+1, model.Command{KV: &o})
	if len(r.out.Entries) == 1 {
		// A granted acquire named its holding period (S64): it must be
		// the one this lock leaves, indexes bound before canon renumbers.
		// (normalizeOp admits an entry only on a lock's true answer, and
		// clears an unknown op's output.)
		if !res.OK || !observe(ns.tr, res.Locked, r.out.Entries[0]) {
			return nil
		}
	}
	ns.canon()
	if o.Verb == model.KVLock {
		return c.lockOutcome(s, ns, r, res, !had || pre.Session == "")
	}
	if r.unknown {
		if res.Err != nil || !res.OK {
			return s // no effect, and the reading was only a guess
		}
		return ns
	}
	if !sameAnswer(res, r.out) {
		return nil
	}
	return ns
}

// lockOutcome judges an acquire. The leader checks lock-delay before
// anything else, so a false answer is legal whatever the model says while a
// delay may be armed; a grant of a free key must come after every delay.
func (c *checker) lockOutcome(s, ns *pstate, r *rec, res model.Result, free bool) *pstate {
	if r.unknown {
		return ns
	}
	key := r.cmds[0].KV.Key
	t := s.tr[key]
	if r.out.Error == "" && !r.out.OK && r.call < t.DelayTo {
		return s // refused for lock-delay: nothing changed
	}
	if r.out.LockDelayed || !sameAnswer(res, r.out) {
		return nil
	}
	if free && res.OK && !c.lossy && r.ret < t.DelayFrom {
		return nil // acquired inside the lock-delay (S22, S49)
	}
	return ns
}

func sameAnswer(res model.Result, out Output) bool {
	if (res.Err != nil) != (out.Error != "") {
		return false
	}
	return res.Err != nil || res.OK == out.OK
}

// stepTxn applies the partition's share of a transaction.
func (c *checker) stepTxn(s *pstate, r *rec, sc *scope) []*pstate {
	full := r.cmds[0].Txn.Ops
	if len(full) > model.MaxTxnOps {
		// The size check rejects the txn before anything else (S44).
		if r.unknown || r.out.Error != "" {
			return []*pstate{s}
		}
		return nil
	}
	if !r.unknown {
		if r.out.Error != "" {
			return nil // the model rejects a whole txn only for its size
		}
		if r.out.LockDelayed {
			return c.txnDelayed(s, r, sc)
		}
	}
	ops, orig := projectTxn(full, sc)
	kvs, _ := (&model.Txn{Ops: ops}).KVOps()
	idx := s.m.Index() + 1
	var lists [][]cand
	var keys []string
	var at []int
	for j, op := range ops {
		if op.KV != nil && usesModifyIndex(*op.KV) {
			cs := txnCands(s, kvs, kvIndex(ops, j), idx)
			if catalogBefore(ops, j) && !slices.ContainsFunc(cs, func(c cand) bool { return c.post }) {
				// An invalidation by an op before it may have written
				// the key at this txn's index, as a KV write would.
				cs = append(cs, cand{local: idx, post: true, l: idx, m: op.KV.Index})
			}
			lists = append(lists, cs)
			keys = append(keys, op.KV.Key)
			at = append(at, j)
		}
	}
	var out []*pstate
	product(lists, func(choice []cand) bool {
		tops := slices.Clone(ops)
		for i, j := range at {
			kv := *tops[j].KV
			kv.Index = choice[i].local
			tops[j].KV = &kv
		}
		if ns := c.txnWith(s, r, sc, tops, orig, idx, keys, choice); ns != nil {
			out = append(out, ns)
		}
		return true
	})
	return out
}

// txnWith applies one reading of a txn's index checks.
func (c *checker) txnWith(s *pstate, r *rec, sc *scope, ops []model.TxnOp, orig []int, idx uint64, keys []string, choice []cand) *pstate {
	base := s.withTrackers()
	if !bindAll(base.tr, keys, choice, false) {
		return nil
	}
	// Its own trackers: the bindings a commit makes below must not leak
	// into base, which the abort paths return.
	ns := &pstate{m: s.m.Clone(), tr: maps.Clone(base.tr)}
	res := ns.m.Apply(idx, model.Command{Txn: &model.Txn{Ops: ops}})
	committed := !res.Failed()
	if committed && !bindAll(ns.tr, keys, choice, true) {
		return nil
	}
	if committed {
		// A catalog or session op's invalidations arm lock-delays as a
		// shared command's do.
		for _, delay := range res.LockDelays {
			c.arm(ns, delay, r)
		}
	}
	if r.unknown {
		if committed {
			ns.canon()
			return ns
		}
		return s // no effect, and the readings were only guesses
	}
	if len(r.out.TxnErrors) > 0 {
		// Aborted: the partition's ops must fail exactly where the server
		// said; ops elsewhere may have caused the abort.
		want := map[int]bool{}
		for _, e := range res.TxnErrors {
			want[orig[e.OpIndex]] = true
		}
		got := map[int]bool{}
		for _, e := range r.out.TxnErrors {
			if slices.Contains(orig, e.OpIndex) {
				got[e.OpIndex] = true
			}
		}
		if r.out.OK || !mapsEqual(want, got) {
			return nil
		}
		return base
	}
	if !committed || !r.out.OK {
		return nil
	}
	var got []model.KVEntry
	for _, e := range r.out.Entries {
		if sc.has(e.Key) {
			got = append(got, e)
		}
	}
	want := res.KVResults()
	if len(got) != len(want) {
		return nil
	}
	for i := range got {
		if !observe(ns.tr, want[i], got[i]) {
			return nil
		}
	}
	if !c.lossy {
		for _, op := range ops {
			if op.KV == nil {
				continue
			}
			e, had := s.m.Get(op.KV.Key)
			if op.KV.Verb == model.KVLock && (!had || e.Session == "") && r.ret < s.tr[op.KV.Key].DelayFrom {
				return nil // acquired inside the lock-delay
			}
		}
	}
	ns.canon()
	return ns
}

// txnDelayed judges a txn refused for lock-delay before raft (S25): nothing
// changed, and the op the error names must be a lock whose key may be in a
// lock-delay. A refused op outside the partition is checked by its own.
func (c *checker) txnDelayed(s *pstate, r *rec, sc *scope) []*pstate {
	full := r.cmds[0].Txn.Ops
	if len(r.out.TxnErrors) == 0 {
		return []*pstate{s}
	}
	j := r.out.TxnErrors[0].OpIndex
	if j < 0 || j >= len(full) || full[j].KV == nil || full[j].KV.Verb != model.KVLock || r.out.OK {
		return nil
	}
	if sc.has(full[j].KV.Key) && r.call >= s.tr[full[j].KV.Key].DelayTo {
		return nil
	}
	return []*pstate{s}
}

// stepRead compares a read with the model's state.
func (c *checker) stepRead(s *pstate, r *rec, sc *scope) []*pstate {
	switch r.read.Kind {
	case ReadKey:
		e, ok := s.m.Get(r.read.Key)
		if ok != r.out.OK {
			return nil
		}
		if !ok {
			return []*pstate{s}
		}
		ns := s.withTrackers()
		if !observe(ns.tr, e, r.out.Entries[0]) {
			return nil
		}
		return []*pstate{ns}
	case ReadPrefix:
		want := s.m.List(r.read.Key)
		var got []model.KVEntry
		for _, e := range r.out.Entries {
			if sc.has(e.Key) {
				got = append(got, e)
			}
		}
		if len(got) != len(want) {
			return nil
		}
		ns := s.withTrackers()
		for i := range want {
			if !observe(ns.tr, want[i], got[i]) {
				return nil
			}
		}
		return []*pstate{ns}
	default: // session-info, session-renew
		se, ok := s.m.Session(r.read.Session)
		if ok != r.out.OK {
			return nil
		}
		if g := r.out.Session; ok && g != nil && (g.ID != se.ID || g.Name != se.Name || g.Node != se.Node ||
			!slices.Equal(g.Checks, se.Checks) || g.LockDelay != se.LockDelay || g.Behavior != se.Behavior || g.TTL != se.TTL) {
			return nil
		}
		return []*pstate{s}
	}
}

// projectTxn keeps the KV ops that read or write a key of the scope, and
// every catalog and session op, which any partition may feel (a session
// invalidated releases its keys); and their positions in the whole txn.
func projectTxn(ops []model.TxnOp, sc *scope) ([]model.TxnOp, []int) {
	var out []model.TxnOp
	var orig []int
	for j, op := range ops {
		if op.KV == nil || sc.all || (sc.keyed && touches(*op.KV, sc.key)) {
			out = append(out, op)
			orig = append(orig, j)
		}
	}
	return out, orig
}

// catalogBefore reports whether a catalog or session op precedes ops[j].
func catalogBefore(ops []model.TxnOp, j int) bool {
	return slices.ContainsFunc(ops[:j], func(op model.TxnOp) bool { return op.KV == nil })
}

// kvIndex is the position of ops[j], a KV op, among ops' KV ops.
func kvIndex(ops []model.TxnOp, j int) int {
	n := 0
	for _, op := range ops[:j] {
		if op.KV != nil {
			n++
		}
	}
	return n
}

func satAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

func mapsEqual(a, b map[int]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
