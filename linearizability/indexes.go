package linearizability

import (
	"math"

	"github.com/tenurekv/tenure/model"
)

// Absolute raft indexes are chosen by the servers, so a history can only be
// checked against them relatively. The model applies each partition's
// operations at local indexes of its own; a key's versions (the writes that
// changed it) are then numbered locally and absolutely, and both numberings
// grow with each new version (S37). The tracker keeps the newest observed
// (local, absolute) pair; an observation contradicting the order, or giving
// one version two absolute indexes, is impossible. See DESIGN.md.

// noMatch is an Index no local ModifyIndex ever equals.
const noMatch = math.MaxUint64

// bindModify records that the key's version with local index l has absolute
// ModifyIndex m, and reports whether that fits what is known. 0 means the
// recorder did not capture the index.
func (t *tracker) bindModify(l, m uint64) bool {
	if m == 0 {
		return true
	}
	switch {
	case l > t.L:
		if m <= t.M {
			return false // a newer version cannot have an older index
		}
		t.L, t.M = l, m
		return true
	case l == t.L:
		return m == t.M
	default:
		return m < t.M
	}
}

// bindCreate records the absolute CreateIndex of the incarnation created at
// local index l: stable for the incarnation, and ordered like any version.
func (t *tracker) bindCreate(l, m uint64) bool {
	if m == 0 {
		return true
	}
	switch {
	case l == t.CL && m != t.CM:
		return false
	case l > t.CL:
		t.CL, t.CM = l, m
	}
	return t.bindModify(l, m)
}

// observe checks a recorded entry got against the model's entry want: the
// client-checkable fields exactly, the indexes relatively. It updates tr.
func observe(tr map[string]tracker, want, got model.KVEntry) bool {
	if want.Key != got.Key || string(want.Value) != string(got.Value) || want.Flags != got.Flags ||
		want.LockIndex != got.LockIndex || want.Session != got.Session {
		return false
	}
	old := tr[want.Key]
	t := old
	if !t.bindCreate(want.CreateIndex, got.CreateIndex) || !t.bindModify(want.ModifyIndex, got.ModifyIndex) {
		return false
	}
	if t != old {
		tr[want.Key] = t
	}
	return true
}

// cand is one reading of a recorded ModifyIndex for the model: the local
// Index to apply with, and the binding the reading implies.
type cand struct {
	local uint64
	// pre binds the key's current (pre-step) version; post binds the version
	// the step itself writes (a txn that wrote the key before comparing it).
	pre, post bool
	l, m      uint64
}

// modifyCands lists the readings of "key's ModifyIndex equals m" against
// the key's current version: certainly equal, certainly not, or either when
// the history has not pinned the version's absolute index. The output of
// the operation then decides between the last two.
func modifyCands(s *pstate, key string, m uint64) []cand {
	e, ok := s.m.Get(key)
	if !ok {
		return []cand{{local: noMatch}} // an absent key matches no index
	}
	t := s.tr[key]
	switch {
	case t.L == e.ModifyIndex:
		if m == t.M {
			return []cand{{local: e.ModifyIndex}}
		}
		return []cand{{local: noMatch}}
	case m <= t.M:
		return []cand{{local: noMatch}} // an older version had index t.M already
	}
	return []cand{{local: e.ModifyIndex, pre: true, l: e.ModifyIndex, m: m}, {local: noMatch}}
}

// txnCands adds, for an index check that follows a write of the same key in
// the same txn, the reading "it matched the txn's own version" (local index
// idx, absolute index unknown until now).
func txnCands(s *pstate, ops []model.KVOp, j int, idx uint64) []cand {
	op := ops[j]
	cs := modifyCands(s, op.Key, op.Index)
	for _, w := range ops[:j] {
		if writesKey(w, op.Key) {
			return append(cs, cand{local: idx, post: true, l: idx, m: op.Index})
		}
	}
	return cs
}

// bindAll applies the pre- or post-bindings of the chosen candidates.
func bindAll(tr map[string]tracker, keys []string, cs []cand, post bool) bool {
	for i, c := range cs {
		if (post && !c.post) || (!post && !c.pre) {
			continue
		}
		t := tr[keys[i]]
		if !t.bindModify(c.l, c.m) {
			return false
		}
		tr[keys[i]] = t
	}
	return true
}

// product calls fn with every choice of one candidate per list, stopping
// when fn returns false.
func product(lists [][]cand, fn func([]cand) bool) {
	choice := make([]cand, len(lists))
	var rec func(i int) bool
	rec = func(i int) bool {
		if i == len(lists) {
			return fn(choice)
		}
		for _, c := range lists[i] {
			choice[i] = c
			if !rec(i + 1) {
				return false
			}
		}
		return true
	}
	rec(0)
}
