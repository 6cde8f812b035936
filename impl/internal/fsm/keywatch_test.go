package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestKeyWatchesWakeOnlyChangedKeys: a write wakes the blocked reads of the
// keys it changed, invalidations included, and no others; a no-op wakes
// nobody; a snapshot restore wakes everyone (S46).
func TestKeyWatchesWakeOnlyChangedKeys(t *testing.T) {
	h := newFSMHarness(t)
	h.setup() // s1 holds k
	k, stopK := h.fsm.keys.watch("k")
	other, stopOther := h.fsm.keys.watch("other")
	k2, stopK2 := h.fsm.keys.watch("k") // a second waiter shares k's channel
	defer stopK2()
	defer stopOther()
	defer stopK()

	h.mustApply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "x", Value: []byte("1")}})
	h.apply(model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: "nobody"}})
	if closed(k) || closed(other) {
		t.Fatal("a write to x, or a refused release of k, woke a read of k or other")
	}
	// The session's invalidation releases k, in the same entry as the destroy.
	h.mustApply(model.Command{DestroySession: &model.DestroySession{ID: "s1"}})
	if !closed(k) || !closed(k2) || closed(other) {
		t.Fatalf("destroy releasing k: k woke %v, second waiter %v, other %v; want true, true, false", closed(k), closed(k2), closed(other))
	}

	var snap memSink
	s, err := h.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Persist(&snap); err != nil {
		t.Fatal(err)
	}
	restored, stopRestored := h.fsm.keys.watch("k")
	defer stopRestored()
	if err := h.fsm.Restore(io.NopCloser(bytes.NewReader(snap.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !closed(restored) {
		t.Fatal("a snapshot restore did not wake every key's reads")
	}
}

// TestKeyWatchesForgetStoppedWaiters: keys watched and never written leave
// nothing behind once their last waiter stops, and a waiter of a fired
// watch stopping late does not drop the key's newer watch.
func TestKeyWatchesForgetStoppedWaiters(t *testing.T) {
	var w keyWatches
	_, stopA := w.watch("a")
	_, stopA2 := w.watch("a")
	stopA()
	stopA() // stop is idempotent
	if w.watched() != 1 {
		t.Fatalf("watched %d keys with one waiter left, want 1", w.watched())
	}
	stopA2()
	if w.watched() != 0 {
		t.Fatalf("watched %d keys after every waiter stopped, want 0", w.watched())
	}

	old, stopOld := w.watch("b")
	w.fire([]string{"b"})
	if !closed(old) {
		t.Fatal("fire did not close b's channel")
	}
	fresh, stopFresh := w.watch("b")
	stopOld()
	if w.watched() != 1 {
		t.Fatal("a late stop of a fired watch removed the key's newer watch")
	}
	w.fire([]string{"b"})
	if !closed(fresh) {
		t.Fatal("the newer watch was not fired")
	}
	stopFresh()
	if w.watched() != 0 {
		t.Fatalf("watched %d keys at the end, want 0", w.watched())
	}
}
