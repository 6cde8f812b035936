package model_test

import (
	"fmt"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestTxnSizeBoundary (S44): a txn of exactly MaxTxnOps ops applies; one
// more is refused as too large and changes nothing.
func TestTxnSizeBoundary(t *testing.T) {
	ops := func(n int) []model.KVOp {
		out := make([]model.KVOp, n)
		for i := range out {
			out[i] = model.KVOp{Verb: model.KVSet, Key: fmt.Sprintf("k%03d", i), Value: []byte("v")}
		}
		return out
	}
	s := model.New()
	if res := s.Apply(1, model.Command{Txn: model.KVTxn(ops(model.MaxTxnOps)...)}); res.Failed() || len(s.List("")) != model.MaxTxnOps {
		t.Fatalf("txn of exactly %d ops: %+v, %d keys", model.MaxTxnOps, res, len(s.List("")))
	}
	before := s.Clone()
	res := s.Apply(2, model.Command{Txn: model.KVTxn(ops(model.MaxTxnOps + 1)...)})
	if res.Err == nil || res.Err.Kind != model.ErrTooLarge {
		t.Fatalf("txn of %d ops: %+v, want a too-large error", model.MaxTxnOps+1, res)
	}
	if !s.Equal(before) {
		t.Fatal("a refused txn changed the state")
	}
}

// TestApplyRefusesAnIndexThatDoesNotAdvance: an entry at the index of the
// last change (not only below it) is refused and changes nothing.
func TestApplyRefusesAnIndexThatDoesNotAdvance(t *testing.T) {
	s := model.New()
	s.Apply(5, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("a")}})
	before := s.Clone()
	for _, idx := range []uint64{4, 5} {
		res := s.Apply(idx, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("b")}})
		if res.Err == nil || !s.Equal(before) {
			t.Fatalf("apply at %d after a change at 5: %+v", idx, res)
		}
	}
	if res := s.Apply(6, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("b")}}); res.Failed() {
		t.Fatalf("apply at 6: %+v", res)
	}
}
