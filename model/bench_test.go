package model_test

import (
	"fmt"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// BenchmarkApplyAcquireRelease measures Apply throughput for the lock hot
// path: one acquire plus one release per iteration, over 1,000 keys and
// 100 sessions so that map sizes are realistic.
func BenchmarkApplyAcquireRelease(b *testing.B) {
	s := model.New()
	idx := uint64(0)
	apply := func(c model.Command) model.Result {
		idx++
		return s.Apply(idx, c)
	}
	apply(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}})
	sessions := make([]string, 100)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("s%d", i)
		apply(model.Command{CreateSession: &model.CreateSession{ID: sessions[i], Node: "n1", Checks: []string{"serfHealth"}}})
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("locks/%04d", i)
	}
	value := []byte("holder")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k, se := keys[i%len(keys)], sessions[i%len(sessions)]
		if r := apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: k, Session: se, Value: value}}); !r.OK {
			b.Fatalf("acquire failed: %+v", r)
		}
		if r := apply(model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: k, Session: se}}); !r.OK {
			b.Fatalf("release failed: %+v", r)
		}
	}
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "applies/s")
}

// BenchmarkApplySessionLifecycle: create, acquire, destroy (invalidation
// releasing the key) per iteration, against a store of 1,000 keys.
func BenchmarkApplySessionLifecycle(b *testing.B) {
	s := model.New()
	idx := uint64(0)
	apply := func(c model.Command) model.Result {
		idx++
		return s.Apply(idx, c)
	}
	apply(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}})
	for i := range 1000 {
		apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: fmt.Sprintf("data/%04d", i)}})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("s%d", i)
		apply(model.Command{CreateSession: &model.CreateSession{ID: id, Node: "n1", Checks: []string{"serfHealth"}}})
		apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "leader", Session: id}})
		if r := apply(model.Command{DestroySession: &model.DestroySession{ID: id}}); len(r.Invalidated) != 1 {
			b.Fatalf("destroy invalidated %v", r.Invalidated)
		}
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "applies/s")
}

// BenchmarkNodeLookup measures what comparing node names ignoring case
// (S62) costs in a catalog of n nodes: a name spelled as registered (an
// exact hit), one spelled in another case, and one no node has (both go
// through the index of lower-cased names), as a register of a new node or
// a read of a missing one does.
func BenchmarkNodeLookup(b *testing.B) {
	for _, n := range []int{100, 10000} {
		s := model.New()
		for i := range n {
			s.Apply(uint64(i+1), model.Command{Register: &model.Register{Node: fmt.Sprintf("node-%05d", i), Address: "10.0.0.1"}})
		}
		for _, tc := range []struct{ what, name string }{
			{"exact", "node-00042"}, {"other-case", "NODE-00042"}, {"missing", "node-x"},
		} {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, tc.what), func(b *testing.B) {
				for b.Loop() {
					s.Node(tc.name)
				}
			})
		}
	}
}

// BenchmarkRegisterWithID measures a register that carries a node ID, as
// the leader's reconcile of an alive member sends (S62), in a catalog of n
// nodes that all have IDs: the ID lookup and the reserved-name check.
func BenchmarkRegisterWithID(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			s := model.New()
			idx := uint64(0)
			for i := range n {
				idx++
				s.Apply(idx, model.Command{Register: &model.Register{Node: fmt.Sprintf("node-%05d", i),
					ID: fmt.Sprintf("4f5a3c1e-0000-4000-8000-%012d", i), Address: "10.0.0.1"}})
			}
			addr := [2]string{"10.0.0.2", "10.0.0.3"}
			for i := 0; b.Loop(); i++ {
				idx++
				// The address alternates, so every register writes the node.
				s.Apply(idx, model.Command{Register: &model.Register{Node: "node-00042",
					ID: "4f5a3c1e-0000-4000-8000-000000000042", Address: addr[i%2]}})
			}
		})
	}
}

// BenchmarkApplyKVTxn: a guarded write per iteration, as the fencing
// recipe sends it (check-session on a held lock, then a set and a get),
// over 1,000 keys; model.KVTxn builds the txn.
func BenchmarkApplyKVTxn(b *testing.B) {
	s := model.New()
	idx := uint64(0)
	apply := func(c model.Command) model.Result {
		idx++
		return s.Apply(idx, c)
	}
	apply(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}})
	apply(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "n1", Checks: []string{"serfHealth"}}})
	apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "lock", Session: "s1"}})
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("data/%04d", i)
		apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: keys[i], Value: []byte("v")}})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := keys[i%len(keys)]
		ops := []model.KVOp{{Verb: model.KVCheckSession, Key: "lock", Session: "s1"},
			{Verb: model.KVSet, Key: k, Value: []byte{byte(i)}}, {Verb: model.KVGet, Key: k}}
		if r := apply(model.Command{Txn: model.KVTxn(ops...)}); r.Failed() {
			b.Fatalf("txn failed: %+v", r)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "txns/s")
}
