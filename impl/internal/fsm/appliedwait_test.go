package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// TestAppliedWaits: a wait ends once its index is applied, not before;
// waiters of one index share a channel, and an advance drops every index it
// reaches, so callers that give up leave nothing behind.
func TestAppliedWaits(t *testing.T) {
	var a appliedWaits
	never := a.sinceAdvance()
	five, six := a.reached(5), a.reached(6)
	if a.reached(5) != five {
		t.Error("two waiters of index 5 got different channels")
	}
	a.advance(4)
	if closed(five) || closed(six) {
		t.Fatal("applying index 4 ended a wait for 5 or 6")
	}
	if a.sinceAdvance() >= never {
		t.Fatalf("after an apply, the time since the last one (%v) still reads as never (%v)", a.sinceAdvance(), never)
	}
	a.advance(5)
	if !closed(five) {
		t.Fatal("applying index 5 did not end the wait for it")
	}
	if closed(six) {
		t.Fatal("applying index 5 ended the wait for 6")
	}
	if a.pending() != 1 {
		t.Fatalf("%d indexes still waited on, want 1 (6)", a.pending())
	}
	a.advance(3) // an older index changes nothing
	if !closed(a.reached(5)) || closed(a.reached(6)) {
		t.Fatal("an advance to an older index moved the applied index back")
	}
	a.advance(9)
	if !closed(six) || a.pending() != 0 {
		t.Fatalf("applying index 9: wait for 6 ended %v, %d indexes left", closed(six), a.pending())
	}
}

// TestFSMAdvancesAppliedWaits: the state machine ends waits for the indexes
// it applies, one by one, in a batch (also when an entry cannot be decoded),
// and on a snapshot restore.
func TestFSMAdvancesAppliedWaits(t *testing.T) {
	h := newFSMHarness(t)
	first := h.fsm.applied.reached(1)
	h.mustApply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "a", Value: []byte("1")}})
	if !closed(first) {
		t.Fatal("Apply of index 1 did not end the wait for it")
	}

	set := commandLog(t, h.codec, 2, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "b", Value: []byte("2")}})
	third, fourth := h.fsm.applied.reached(3), h.fsm.applied.reached(4)
	h.fsm.ApplyBatch([]*raft.Log{
		set,
		{Index: 3, Term: 1, Type: raft.LogCommand, Data: []byte{0xff}}, // undecodable
	})
	if !closed(third) || closed(fourth) {
		t.Fatalf("a batch up to index 3: wait for 3 ended %v, for 4 ended %v", closed(third), closed(fourth))
	}
	h.fsm.ApplyBatch([]*raft.Log{{Index: 4, Term: 1, Type: raft.LogCommand, Data: []byte{0xff}}})
	if !closed(fourth) {
		t.Fatal("a batch of one undecodable entry did not end the wait for its index")
	}

	data := snapshotBytes(t, h.fsm)
	other := newFSMHarness(t)
	restored := other.fsm.applied.reached(h.fsm.state.Index())
	if err := other.fsm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !closed(restored) {
		t.Fatalf("restoring a snapshot at index %d did not end the wait for it", h.fsm.state.Index())
	}
}
