package linearizability

import (
	"maps"
	"slices"

	"github.com/tenurekv/tenure/model"
)

// pstate is one partition's state: the model's state restricted to the
// partition (every session and catalog entry, and only the partition's
// keys), plus per key what the history revealed of its absolute raft
// indexes and lock-delay windows. Steps never mutate a pstate; they copy it.
type pstate struct {
	m *model.State
	// tr is keyed by KV key; keys with nothing learned are absent.
	tr map[string]tracker
}

// tracker is what one key's history pinned down beyond the model's state.
// It is a plain comparable struct so that states hash and compare cheaply.
//
// Absolute indexes: the model numbers writes with local indexes of its own.
// Each version of a key (each write that changed it) has one local and one
// absolute ModifyIndex, and both grow with every new version (S37). (L, M)
// is the newest version whose absolute index was observed; (CL, CM) the
// newest incarnation whose absolute CreateIndex was observed.
type tracker struct {
	L, M   uint64
	CL, CM uint64
	// DelayFrom is the earliest time the key's latest lock-delay can end,
	// DelayTo the latest (both 0 when never armed). An acquire granted before
	// DelayFrom, or refused for lock-delay after DelayTo, is impossible.
	DelayFrom, DelayTo int64
}

func (s *pstate) clone() *pstate {
	return &pstate{m: s.m.Clone(), tr: maps.Clone(s.tr)}
}

// withTrackers copies only the trackers: for steps that leave the model's
// state as it is (reads), which then stays shared.
func (s *pstate) withTrackers() *pstate {
	return &pstate{m: s.m, tr: maps.Clone(s.tr)}
}

func (s *pstate) equal(o *pstate) bool {
	return maps.Equal(s.tr, o.tr) && (s.m == o.m || s.m.Equal(o.m))
}

// hash covers a subset of what equal compares, so equal states hash alike.
// Map contents are combined with XOR so that iteration order does not matter.
func (s *pstate) hash() uint64 {
	_, _, sessions, keys, _ := s.m.Counts()
	h := uint64(sessions)<<32 ^ uint64(keys)
	for id := range s.m.Sessions() {
		h ^= strHash(id)
	}
	for k, e := range s.m.Entries() {
		x := strHash(k) ^ strHash(e.Session) ^ strHash(string(e.Value))
		x = mix(x ^ e.LockIndex)
		x = mix(x ^ e.Flags)
		h ^= mix(x ^ e.ModifyIndex)
	}
	for k, t := range s.tr {
		x := strHash(k)
		for _, v := range [...]uint64{t.L, t.M, t.CL, t.CM, uint64(t.DelayFrom), uint64(t.DelayTo)} {
			x = mix(x ^ v)
		}
		h ^= x
	}
	return h
}

// strHash is FNV-1a; it allocates nothing.
func strHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is a 64-bit finalizer (splitmix64) that spreads small integers.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// canon renames the local indexes of a freshly stepped state so that states
// differing only in the order of commuting steps are equal, which is what
// lets porcupine's memoisation prune interleavings. Nothing checked depends
// on local indexes across keys: each key's index values (entry, tombstone,
// lock-delay record, tracker) are replaced by their rank among that key's
// values, which keeps their order; sessions, nodes and checks get index 0
// (their indexes are never compared). The next Apply then runs above every
// rank, so a key's next version still sorts after its earlier ones.
func (s *pstate) canon() {
	var top uint64
	var vals []uint64
	// rank replaces each of a key's nonzero indexes (the model's and its
	// tracker's) by its rank among them.
	rankKey := func(k string, ix model.KeyIndexes) model.KeyIndexes {
		t, tracked := s.tr[k]
		vals = append(vals[:0], ix.Create, ix.Modify, ix.Deleted, ix.DelayedAt, t.L, t.CL)
		slices.Sort(vals)
		vals = slices.Compact(vals)
		if vals[0] == 0 {
			vals = vals[1:]
		}
		rank := func(v uint64) uint64 {
			if v == 0 {
				return 0
			}
			i, _ := slices.BinarySearch(vals, v)
			return uint64(i + 1)
		}
		top = max(top, uint64(len(vals)))
		if tracked {
			t.L, t.CL = rank(t.L), rank(t.CL)
			s.tr[k] = t
		}
		return model.KeyIndexes{Create: rank(ix.Create), Modify: rank(ix.Modify), Deleted: rank(ix.Deleted), DelayedAt: rank(ix.DelayedAt)}
	}
	s.m.Renumber(rankKey, func() uint64 {
		// Keys the history pinned down that the state no longer records.
		for k := range s.tr {
			_, live := s.m.Get(k)
			_, tomb := s.m.Tombstone(k)
			_, delayed := s.m.DelayedAt(k)
			if !live && !tomb && !delayed {
				rankKey(k, model.KeyIndexes{})
			}
		}
		return top
	})
}
