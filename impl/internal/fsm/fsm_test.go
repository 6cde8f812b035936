package fsm

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

type fsmHarness struct {
	t           *testing.T
	clock       *clocktest.Manual
	codec       *wireCodec
	delays      *leader.LockDelays
	fsm         *FSM
	invalidated []string
	index       uint64
}

func newFSMHarness(t *testing.T) *fsmHarness {
	h := &fsmHarness{t: t, clock: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), codec: newWireCodec()}
	h.delays = leader.NewLockDelays(h.clock)
	h.fsm = newFSM(h.codec, guardEffects{h.delays, func(ids []string) { h.invalidated = append(h.invalidated, ids...) }})
	return h
}

// apply feeds cmd to the FSM as raft would and returns its response.
func (h *fsmHarness) apply(cmd model.Command) any {
	h.t.Helper()
	h.index++
	return h.fsm.Apply(commandLog(h.t, h.codec, h.index, cmd))
}

func (h *fsmHarness) applyRaw(data []byte) any {
	h.index++
	return h.fsm.Apply(&raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: data})
}

func (h *fsmHarness) mustApply(cmd model.Command) model.Result {
	h.t.Helper()
	res, ok := h.apply(cmd).(model.Result)
	if !ok || res.Failed() {
		h.t.Fatalf("apply %+v: %+v", cmd, res)
	}
	return res
}

func (h *fsmHarness) setup() {
	h.mustApply(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
		{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}}})
	h.mustApply(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "n1",
		Checks: []string{model.SerfHealthCheckID}, LockDelay: 10 * time.Second}})
	h.mustApply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "s1"}})
}

func TestFSMAnswersUndecodableEntryWithError(t *testing.T) {
	h := newFSMHarness(t)
	h.setup()
	before := h.fsm.state.Clone()
	for _, data := range [][]byte{nil, {9, 1, 0x80}, {commandVersion, 42}, {commandVersion, cmdKV, 0xc1}} {
		resp := h.applyRaw(data)
		err, ok := resp.(error)
		if !ok {
			t.Fatalf("entry %x: response %T, want error", data, resp)
		}
		if !strings.Contains(err.Error(), "raft entry") {
			t.Errorf("entry %x: error %q does not name the entry", data, err)
		}
	}
	if !h.fsm.state.Equal(before) {
		t.Fatal("an undecodable entry changed the state")
	}
}

func TestFSMArmsLockDelayAndReportsInvalidation(t *testing.T) {
	h := newFSMHarness(t)
	h.setup()
	if err := h.delays.Check([]string{"k"}); err != nil {
		t.Fatalf("lock-delay before any invalidation: %v", err)
	}
	// serfHealth going critical invalidates s1 (S12) and arms k's delay (S22).
	h.mustApply(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
		{CheckID: model.SerfHealthCheckID, Status: model.HealthCritical}}}})
	if !slices.Equal(h.invalidated, []string{"s1"}) {
		t.Fatalf("invalidated = %v, want [s1]", h.invalidated)
	}
	var lde *leader.LockDelayError
	if err := h.delays.Check([]string{"other", "k"}); !errors.As(err, &lde) || lde.Key != "k" || lde.Remaining != 10*time.Second {
		t.Fatalf("check right after invalidation = %v, want k with 10s remaining", err)
	}
	h.clock.Advance(10*time.Second - time.Nanosecond)
	if err := h.delays.Check([]string{"k"}); err == nil {
		t.Fatal("lock-delay ended early")
	}
	h.clock.Advance(time.Nanosecond)
	if err := h.delays.Check([]string{"k"}); err != nil {
		t.Fatalf("lock-delay outlived its 10s: %v", err)
	}
}

func TestFSMChangedWakesOnlyOnChange(t *testing.T) {
	h := newFSMHarness(t)
	h.setup()
	ch := h.fsm.Changed()
	// Identical content and a refused lock change nothing.
	h.mustApply(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
		{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}}})
	h.apply(model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "k", Session: "nobody"}})
	select {
	case <-ch:
		t.Fatal("Changed fired for commands that changed nothing")
	default:
	}
	h.mustApply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "x", Value: []byte("1")}})
	select {
	case <-ch:
	default:
		t.Fatal("Changed did not fire for a write")
	}
}

// memSink is a raft.SnapshotSink into memory.
type memSink struct {
	bytes.Buffer
	cancelled, closed bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

func TestFSMSnapshotRestore(t *testing.T) {
	h := newFSMHarness(t)
	h.setup()
	h.mustApply(model.Command{DestroySession: &model.DestroySession{ID: "s1"}})
	if h.delays.Remaining("k") == 0 {
		t.Fatal("setup: destroy armed no lock-delay")
	}
	snap, err := h.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := h.fsm.state.Clone()
	// A write after the snapshot must not leak into it.
	h.mustApply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "later", Value: []byte("x")}})
	var sink memSink
	if err := snap.Persist(&sink); err != nil || !sink.closed {
		t.Fatalf("persist: %v (closed %v)", err, sink.closed)
	}
	snap.Release()

	other := newFSMHarness(t)
	other.delays.Arm([]model.LockDelay{{Key: "k", Delay: time.Minute}})
	ch := other.fsm.Changed()
	if err := other.fsm.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !other.fsm.state.Equal(want) {
		t.Fatal("restored state differs from the snapshot's")
	}
	if other.delays.Remaining("k") != 0 {
		t.Fatal("restore kept a lock-delay; Consul forgets them (CONSUL.md §4)")
	}
	select {
	case <-ch:
	default:
		t.Fatal("restore did not wake blocking queries")
	}
	if err := other.fsm.Restore(io.NopCloser(bytes.NewReader([]byte{snapshotVersion, 0xc1}))); err == nil {
		t.Fatal("restore accepted a corrupt snapshot")
	}
	if !other.fsm.state.Equal(want) {
		t.Fatal("a failed restore changed the state")
	}
}

// failingSink fails every write, to show Persist cancels.
type failingSink struct{ memSink }

func (s *failingSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFSMSnapshotPersistCancelsOnError(t *testing.T) {
	h := newFSMHarness(t)
	h.setup()
	snap, err := h.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink failingSink
	if err := snap.Persist(&sink); err == nil || !sink.cancelled {
		t.Fatalf("persist onto a failing sink: err %v, cancelled %v", err, sink.cancelled)
	}
}

// TestFSMUsesApplySeam: Config.Apply (a test seam for broken variants)
// replaces the model's Apply; its result is what the FSM acts on and the
// state it returns is the one the FSM keeps.
func TestFSMUsesApplySeam(t *testing.T) {
	h := newFSMHarness(t)
	var seen []uint64
	var last *model.State
	h.fsm.apply = func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
		seen = append(seen, index)
		res := st.Apply(index, cmd)
		res.LockDelays = nil // a variant that never arms lock-delay
		last = st.Clone()
		return last, res
	}
	h.setup()
	h.mustApply(model.Command{DestroySession: &model.DestroySession{ID: "s1"}})
	if !slices.Equal(seen, []uint64{1, 2, 3, 4}) {
		t.Fatalf("seam saw indexes %v, want 1..4", seen)
	}
	if rem := h.delays.Remaining("k"); rem != 0 {
		t.Fatalf("lock-delay armed (%v) although the seam dropped it", rem)
	}
	if h.fsm.state != last {
		t.Fatal("the FSM kept its own state, not the one the seam returned")
	}
}

// TestFSMObservesEveryIndex: Config.Observe sees each applied entry on its
// own, failed ones included, with the states around it, and a restore as a
// change without a command.
func TestFSMObservesEveryIndex(t *testing.T) {
	h := newFSMHarness(t)
	var seen []Change
	h.fsm.observe = func(c Change) {
		c.After = c.After.Clone() // After is only valid during the call
		seen = append(seen, c)
	}
	h.setup()
	h.apply(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "nobody"}}) // refused
	h.mustApply(model.Command{DestroySession: &model.DestroySession{ID: "s1"}})
	if len(seen) != 5 {
		t.Fatalf("observed %d changes, want one per entry (5)", len(seen))
	}
	for i, c := range seen {
		if c.index != uint64(i+1) || c.Command == nil {
			t.Fatalf("change %d: index %d, command %v", i, c.index, c.Command)
		}
		if i > 0 && !c.Before.Equal(seen[i-1].After) {
			t.Fatalf("change %d: Before is not the previous change's After", i)
		}
	}
	last := seen[4]
	if e, _ := last.Before.Get("k"); e.Session != "s1" {
		t.Fatalf("before the destroy k is %+v, want held by s1", e)
	}
	if e, _ := last.After.Get("k"); e.Session != "" || !slices.Equal(last.result.Invalidated, []string{"s1"}) {
		t.Fatalf("after the destroy k is %+v, invalidated %v", e, last.result.Invalidated)
	}

	data := snapshotBytes(t, h.fsm)
	other := newFSMHarness(t)
	var restored []Change
	other.fsm.observe = func(c Change) { restored = append(restored, c) }
	if err := other.fsm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if len(restored) != 1 || restored[0].Command != nil || restored[0].index != h.fsm.state.Index() ||
		!restored[0].After.Equal(h.fsm.state) || restored[0].Before.Index() != 0 {
		t.Fatalf("restore observed as %+v", restored)
	}
}

// TestFSMObservedStatesAcrossBatchesAndRestore: in batches, and after a
// restore, each observed Before and After is the state a plain replay of
// the commands reaches, and no later entry changes a Before already seen
// (the observed copies share unchanged tables: model.State.CloneSince).
func TestFSMObservedStatesAcrossBatchesAndRestore(t *testing.T) {
	h := newFSMHarness(t)
	replay := model.New()
	var befores []*model.State
	var hashes []uint64
	h.fsm.observe = func(c Change) {
		if c.Command == nil {
			replay = c.After.Clone()
			return
		}
		if !c.Before.Equal(replay) {
			t.Fatalf("entry %d: Before is not the replayed state", c.index)
		}
		replay.Apply(c.index, *c.Command)
		if !c.After.Equal(replay) {
			t.Fatalf("entry %d: After is not the replayed state", c.index)
		}
		befores, hashes = append(befores, c.Before), append(hashes, c.Before.Hash())
	}
	h.setup()
	batch := func(cmds ...model.Command) {
		var logs []*raft.Log
		for _, cmd := range cmds {
			h.index++
			logs = append(logs, commandLog(t, h.codec, h.index, cmd))
		}
		h.fsm.ApplyBatch(logs)
	}
	lock := func(key, sess string) model.Command {
		return model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: key, Session: sess}}
	}
	batch(lock("a", "s1"), lock("a", "nobody"), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "b", Value: []byte("x")}},
		model.Command{KV: &model.KVOp{Verb: model.KVDelete, Key: "b"}}, model.Command{Reap: &model.Reap{Index: h.index + 4}})
	data := snapshotBytes(t, h.fsm)
	batch(model.Command{DestroySession: &model.DestroySession{ID: "s1"}}, lock("c", "s1"))
	if err := h.fsm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	batch(model.Command{Register: &model.Register{Node: "n2"}}, lock("d", "s1"))
	if len(befores) != 12 {
		t.Fatalf("observed %d entries, want 12", len(befores))
	}
	for i, b := range befores {
		if b.Hash() != hashes[i] {
			t.Fatalf("observed entry %d's Before changed after it was observed", i)
		}
	}
}

// snapshotBytes is f's snapshot as raft would persist it.
func snapshotBytes(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// commandLog is cmd as raft logs it at index (term 1).
func commandLog(tb testing.TB, codec *wireCodec, index uint64, cmd model.Command) *raft.Log {
	tb.Helper()
	data, err := codec.encodeCommand(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}
