package model

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
)

// Hash is a stable 64-bit digest of the state: equal states hash equally on
// every run and platform, because maps are walked in sorted order.
func (s *State) Hash() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	str := func(v string) {
		num(uint64(len(v)))
		h.Write([]byte(v))
	}
	t := s.tables
	num(t.Nodes)
	num(t.Checks)
	num(t.Sessions)
	num(t.KV)
	num(s.lockFloor)
	num(s.reapedThrough)
	num(uint64(len(s.nodes)))
	for _, k := range sortedKeys(s.nodes) {
		n := s.nodes[k]
		str(n.Name)
		str(n.Address)
		num(n.CreateIndex)
		num(n.ModifyIndex)
	}
	checkKeys := slices.SortedFunc(maps.Keys(s.checks), func(a, b CheckKey) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.CheckID, b.CheckID)
	})
	num(uint64(len(checkKeys)))
	for _, k := range checkKeys {
		c := s.checks[k]
		str(c.Node)
		str(c.CheckID)
		str(c.Name)
		str(string(c.Status))
		num(c.CreateIndex)
		num(c.ModifyIndex)
	}
	num(uint64(len(s.sessions)))
	for _, k := range sortedKeys(s.sessions) {
		se := s.sessions[k]
		str(se.ID)
		str(se.Name)
		str(se.Node)
		num(uint64(len(se.Checks)))
		for _, c := range se.Checks {
			str(c)
		}
		num(uint64(se.LockDelay))
		str(string(se.Behavior))
		str(se.TTL)
		num(se.CreateIndex)
		num(se.ModifyIndex)
	}
	num(uint64(len(s.kv)))
	for _, k := range sortedKeys(s.kv) {
		e := s.kv[k]
		str(e.Key)
		str(string(e.Value))
		num(e.Flags)
		num(e.LockIndex)
		str(e.Session)
		num(e.CreateIndex)
		num(e.ModifyIndex)
	}
	for _, m := range []map[string]uint64{s.tombstones, s.lockIssued, s.delayedAt} {
		num(uint64(len(m)))
		for _, k := range sortedKeys(m) {
			str(k)
			num(m[k])
		}
	}
	return h.Sum64()
}
