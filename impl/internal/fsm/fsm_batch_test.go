package fsm

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// lockedArmClock is the lock-delay guard's clock. Arming reads the clock, so
// it notes every arm made while the FSM's write lock was free, that is, after
// the entry that armed could already be read.
type lockedArmClock struct {
	*clocktest.Manual
	f        *FSM
	watching bool
	unlocked int
}

func (c *lockedArmClock) Now() time.Time {
	if c.watching && c.f.mu.TryRLock() {
		c.f.mu.RUnlock()
		c.unlocked++
	}
	return c.Manual.Now()
}

// batchRun is a fresh fsm with every side effect of applying recorded.
type batchRun struct {
	t           *testing.T
	clock       *lockedArmClock
	f           *FSM
	delays      *leader.LockDelays // the FSM's, through guardEffects
	invalidated [][]string
	changes     []Change
	durable     []uint64 // indexes awaitDurable was asked for
	watches     map[string]<-chan struct{}
	changed     <-chan struct{} // Changed, taken before anything applied
}

// batchWatched are the keys a run watches: the sequence writes all but the last.
var batchWatched = []string{"a", "b", "x", "untouched"}

func newBatchRun(t *testing.T) *batchRun {
	r := &batchRun{t: t, watches: map[string]<-chan struct{}{}}
	r.clock = &lockedArmClock{Manual: clocktest.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	r.delays = leader.NewLockDelays(r.clock)
	r.f = newFSM(newWireCodec(), guardEffects{r.delays, func(ids []string) {
		r.invalidated = append(r.invalidated, slices.Clone(ids))
	}})
	r.clock.f = r.f
	r.f.observe = func(c Change) {
		c.After = c.After.Clone() // After is only valid during the call
		r.changes = append(r.changes, c)
	}
	r.f.awaitDurable = func(idx uint64) error {
		r.durable = append(r.durable, idx)
		return nil
	}
	for _, k := range batchWatched {
		r.watches[k], _ = r.f.keys.watch(k)
	}
	r.changed = r.f.Changed()
	return r
}

// oneByOne applies logs as raft does for an FSM that does not batch: Apply
// for each command, and nothing (a nil response) for any other entry.
func (r *batchRun) oneByOne(logs []*raft.Log) []any {
	r.clock.watching = true
	defer func() { r.clock.watching = false }()
	out := make([]any, len(logs))
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = r.f.Apply(l)
		}
	}
	return out
}

func (r *batchRun) batch(logs []*raft.Log) []any {
	r.clock.watching = true
	defer func() { r.clock.watching = false }()
	out := r.f.ApplyBatch(logs)
	if len(out) != len(logs) {
		r.t.Fatalf("ApplyBatch answered %d responses for %d entries", len(out), len(logs))
	}
	return out
}

// woken lists the watched keys whose channel was closed.
func (r *batchRun) woken() []string {
	var out []string
	for _, k := range batchWatched {
		if closed(r.watches[k]) {
			out = append(out, k)
		}
	}
	return out
}

// batchSequence is a workload raft could commit in one batch: sessions,
// acquires, a release, a delete, a destroy that releases a lock and arms its
// delay, an acquire refused by that delay, a health change invalidating the
// other session, a refused release, two configuration entries and an entry
// that does not decode.
func batchSequence(t testing.TB) []*raft.Log {
	codec := newWireCodec()
	var logs []*raft.Log
	add := func(typ raft.LogType, data []byte) {
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Term: 2, Type: typ, Data: data})
	}
	cmd := func(c model.Command) {
		add(raft.LogCommand, commandLog(t, codec, 0, c).Data)
	}
	kv := func(verb model.KVVerb, key, session string) {
		cmd(model.Command{KV: &model.KVOp{Verb: verb, Key: key, Session: session, Value: []byte(key)}})
	}
	serf := func(status model.Health) {
		cmd(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
			{CheckID: model.SerfHealthCheckID, Status: status}}}})
	}
	config := func() {
		add(raft.LogConfiguration, raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{
			{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:8300"}}}))
	}
	serf(model.HealthPassing) // 1
	for _, s := range []struct {
		id    string
		delay time.Duration
	}{{"s1", 10 * time.Second}, {"s2", 5 * time.Second}} { // 2, 3
		cmd(model.Command{CreateSession: &model.CreateSession{ID: s.id, Node: "n1",
			Checks: []string{model.SerfHealthCheckID}, LockDelay: s.delay}})
	}
	kv(model.KVLock, "a", "s1")                                         // 4
	kv(model.KVLock, "b", "s1")                                         // 5
	kv(model.KVSet, "x", "")                                            // 6
	config()                                                            // 7
	kv(model.KVUnlock, "a", "s1")                                       // 8
	add(raft.LogCommand, []byte{9, 1, 0x80})                            // 9: does not decode
	kv(model.KVDelete, "x", "")                                         // 10
	kv(model.KVLock, "a", "s2")                                         // 11
	cmd(model.Command{DestroySession: &model.DestroySession{ID: "s1"}}) // 12: releases b, arms its delay
	// 13: the leader found b free at 11; the destroy's delay refuses it.
	cmd(model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "b", Session: "s2", LockDelaySeen: 11}})
	serf(model.HealthCritical)        // 14: invalidates s2, releases a, arms its delay
	kv(model.KVUnlock, "a", "nobody") // 15: refused, changes nothing
	config()                          // 16
	return logs
}

// sameResponses compares two runs' responses entry by entry; errors by text,
// as a client sees them.
func sameResponses(t *testing.T, got, want []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d responses, want %d", len(got), len(want))
	}
	for i := range want {
		ge, gotErr := got[i].(error)
		we, wantErr := want[i].(error)
		switch {
		case gotErr && wantErr:
			if ge.Error() != we.Error() {
				t.Errorf("entry %d: error %q, want %q", i+1, ge, we)
			}
		case !reflect.DeepEqual(got[i], want[i]):
			t.Errorf("entry %d: response %#v, want %#v", i+1, got[i], want[i])
		}
	}
}

// sameChanges compares two runs' observed changes.
func sameChanges(t *testing.T, got, want []Change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("observed %d changes, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.index != w.index || g.Term != w.Term || !reflect.DeepEqual(g.Command, w.Command) ||
			!reflect.DeepEqual(g.result, w.result) {
			t.Errorf("change %d: %d/%d %+v %+v, want %d/%d %+v %+v", i, g.index, g.Term, g.Command, g.result,
				w.index, w.Term, w.Command, w.result)
		}
		if !g.Before.Equal(w.Before) || !g.After.Equal(w.After) {
			t.Errorf("change %d (index %d): Before or After differs", i, w.index)
		}
	}
}

// TestFSMApplyBatchMatchesOneByOne: a batch answers, changes and tells the
// rest of the server exactly what Apply does entry by entry.
func TestFSMApplyBatchMatchesOneByOne(t *testing.T) {
	logs := batchSequence(t)
	one, all := newBatchRun(t), newBatchRun(t)
	want := one.oneByOne(logs)
	got := all.batch(logs)

	// The reference itself is as expected, so that agreeing with it means
	// something.
	if want[6] != nil || want[15] != nil {
		t.Fatalf("one by one: configuration entries answered %v, %v", want[6], want[15])
	}
	if _, ok := want[8].(error); !ok {
		t.Fatalf("one by one: undecodable entry answered %#v", want[8])
	}
	if res := want[12].(model.Result); !slices.Equal(res.DelayRefused, []string{"b"}) {
		t.Fatalf("one by one: acquire during b's lock-delay answered %+v", res)
	}
	if !slices.Equal(one.woken(), []string{"a", "b", "x"}) || len(one.changes) != 13 ||
		!reflect.DeepEqual(one.invalidated, [][]string{{"s1"}, {"s2"}}) {
		t.Fatalf("one by one: woke %v, observed %d changes, invalidated %v", one.woken(), len(one.changes), one.invalidated)
	}

	sameResponses(t, got, want)
	if !all.f.state.Equal(one.f.state) {
		t.Error("the batch left another state than one-by-one Apply")
	}
	sameChanges(t, all.changes, one.changes)
	if !reflect.DeepEqual(all.invalidated, one.invalidated) {
		t.Errorf("invalidated %v, want %v", all.invalidated, one.invalidated)
	}
	if w, g := one.woken(), all.woken(); !slices.Equal(g, w) {
		t.Errorf("woke key watches %v, want %v", g, w)
	}
	for _, k := range []string{"a", "b"} {
		if g, w := all.delays.Remaining(k), one.delays.Remaining(k); g != w || w == 0 {
			t.Errorf("lock-delay of %s: %v remaining, want %v", k, g, w)
		}
	}
	if all.clock.unlocked != 0 || one.clock.unlocked != 0 {
		t.Errorf("lock-delays armed without the write lock: %d in the batch, %d one by one",
			all.clock.unlocked, one.clock.unlocked)
	}
	if !closed(all.changed) {
		t.Error("the batch did not close Changed")
	}
	// The sequence ends with a configuration entry (16) after its last
	// command (15); both are waited for, at once.
	if !slices.Equal(all.durable, []uint64{16}) {
		t.Errorf("batch awaited durability of %v, want once, of its last gated entry [16]", all.durable)
	}
}

// TestFSMApplyBatchWakesChangedOnce: Changed is replaced once per batch, not
// per entry, and a batch that changes nothing leaves it open.
func TestFSMApplyBatchWakesChangedOnce(t *testing.T) {
	logs := batchSequence(t)
	chansSeen := func(r *batchRun) *[]chan struct{} {
		var seen []chan struct{}
		// The seam runs on the applying goroutine under the write lock,
		// so it may read the field.
		r.f.apply = func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
			seen = append(seen, r.f.changed)
			return st, st.Apply(index, cmd)
		}
		return &seen
	}
	one, all := newBatchRun(t), newBatchRun(t)
	oneSeen, allSeen := chansSeen(one), chansSeen(all)
	one.oneByOne(logs)
	all.batch(logs)
	if n := len(slices.Compact(slices.Clone(*oneSeen))); n < 2 {
		t.Fatalf("one by one: entries saw %d Changed channels; the check cannot tell", n)
	}
	if n := len(slices.Compact(slices.Clone(*allSeen))); n != 1 {
		t.Fatalf("the batch replaced Changed between its entries (%d channels)", n)
	}
	if !closed(all.changed) {
		t.Fatal("the batch did not close Changed")
	}
	// A blocking query that took Changed before the batch and reads after
	// its wake sees every entry.
	all.f.Read(func(st *model.State) {
		if st.Index() != one.f.state.Index() || !st.Equal(one.f.state) {
			t.Fatalf("read after the wake is at index %d, want %d", st.Index(), one.f.state.Index())
		}
	})

	next := all.f.Changed()
	if closed(next) {
		t.Fatal("Changed after the batch is already closed")
	}
	refused := commandLog(t, newWireCodec(), 17, model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "a", Session: "nobody"}})
	all.batch([]*raft.Log{
		refused,
		{Index: 18, Type: raft.LogConfiguration, Data: logs[6].Data},
		{Index: 19, Type: raft.LogCommand, Data: []byte{9}},
	})
	if closed(next) {
		t.Fatal("a batch that changed nothing closed Changed")
	}
}

// TestFSMApplyBatchHonoursApplySeam: with Config.Apply set, a batch runs the
// seam for each decoded command, acts on what it answers, keeps the state it
// returns and, since the seam may change keys it does not list, wakes every
// key watch, just as one-by-one Apply does.
func TestFSMApplyBatchHonoursApplySeam(t *testing.T) {
	logs := batchSequence(t)
	seam := func(r *batchRun) (seen *[]uint64, last **model.State) {
		seen, last = new([]uint64), new(*model.State)
		r.f.apply = func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
			*seen = append(*seen, index)
			res := st.Apply(index, cmd)
			res.LockDelays = nil // a variant that never arms lock-delay
			*last = st.Clone()
			return *last, res
		}
		return seen, last
	}
	one, all := newBatchRun(t), newBatchRun(t)
	oneSeen, _ := seam(one)
	allSeen, allLast := seam(all)
	want := one.oneByOne(logs)
	got := all.batch(logs)
	if !slices.Equal(*oneSeen, []uint64{1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 13, 14, 15}) {
		t.Fatalf("one by one: the seam saw %v", *oneSeen)
	}
	if !slices.Equal(*allSeen, *oneSeen) {
		t.Fatalf("the seam saw %v in the batch, want %v", *allSeen, *oneSeen)
	}
	if all.f.state != *allLast {
		t.Fatal("the batch kept its own state, not the one the seam returned")
	}
	sameResponses(t, got, want)
	sameChanges(t, all.changes, one.changes)
	if !all.f.state.Equal(one.f.state) {
		t.Error("the batch left another state than one-by-one Apply")
	}
	for _, k := range []string{"a", "b"} {
		if rem := all.delays.Remaining(k); rem != 0 {
			t.Errorf("lock-delay of %s armed (%v) although the seam dropped it", k, rem)
		}
	}
	if w, g := one.woken(), all.woken(); !slices.Equal(w, batchWatched) || !slices.Equal(g, w) {
		t.Errorf("woke key watches %v, want %v as one by one", g, w)
	}
}

// TestFSMApplyBatchNeedsDurableLog: a batch whose last command or
// configuration entry is not safe stops the server before applying any of
// it. A configuration entry waits too: raft answers the membership change
// once its batch is applied, and the next change may start then.
func TestFSMApplyBatchNeedsDurableLog(t *testing.T) {
	logs := batchSequence(t)
	r := newBatchRun(t)
	notYet := errors.New("not on disk")
	r.f.awaitDurable = func(idx uint64) error {
		r.durable = append(r.durable, idx)
		return notYet
	}
	cfg := logs[6]
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), fmt.Sprintf("raft entry %d", cfg.Index)) {
				t.Errorf("configuration-only batch: panic %v, want one naming entry %d", p, cfg.Index)
			}
		}()
		r.batch([]*raft.Log{cfg})
	}()
	if !slices.Equal(r.durable, []uint64{cfg.Index}) {
		t.Fatalf("configuration-only batch awaited %v, want [%d]", r.durable, cfg.Index)
	}
	// The panic ended that process; the next batch is a fresh one's.
	r.durable = nil
	r.f.stopped.Store(false)
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "raft entry 16") ||
				!strings.Contains(fmt.Sprint(p), "not on disk") {
				t.Errorf("panic %v, want one naming entry 16 and the cause", p)
			}
		}()
		r.batch(logs)
	}()
	if !slices.Equal(r.durable, []uint64{16}) {
		t.Errorf("awaited %v, want [16]", r.durable)
	}
	if r.f.state.Index() != 0 || closed(r.changed) || len(r.changes) != 0 {
		t.Error("a batch that is not on disk was applied")
	}
}

// BenchmarkFSMApplyBatch applies 16 entries, an acquire and a release of
// each of 8 keys, one by one and as one batch, with the durability wait a
// server has (already satisfied). With waiters, that many blocking queries
// wait on Changed and read the state at each wake, as list reads do; a
// batch wakes them once instead of once per entry. ns/entry is ns/op / 16.
func BenchmarkFSMApplyBatch(b *testing.B) {
	const n = 16
	for _, waiters := range []int{0, 64} {
		for _, mode := range []string{"one-by-one", "batch"} {
			b.Run(fmt.Sprintf("%s/waiters=%d", mode, waiters), func(b *testing.B) {
				benchFSMApply(b, n, waiters, mode == "batch")
			})
		}
	}
}

func benchFSMApply(b *testing.B, n, waiters int, batch bool) {
	codec := newWireCodec()
	f := newFSM(codec, guardEffects{leader.NewLockDelays(clocktest.NewManual(time.Unix(0, 0))), nil})
	// Every entry is on disk already: the gate answers at once.
	f.awaitDurable = func(uint64) error { return nil }
	var index uint64
	setup := func(c model.Command) {
		index++
		if res, ok := f.Apply(commandLog(b, codec, index, c)).(model.Result); !ok || res.Failed() {
			b.Fatalf("setup %+v: %+v", c, res)
		}
	}
	setup(model.Command{Register: &model.Register{Node: "n1"}})
	setup(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "n1"}})
	logs := make([]*raft.Log, n)
	for i := range logs {
		verb := model.KVLock
		if i%2 == 1 {
			verb = model.KVUnlock
		}
		logs[i] = commandLog(b, codec, 0, model.Command{KV: &model.KVOp{Verb: verb, Key: fmt.Sprintf("k%d", i/2), Session: "s1"}})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range waiters {
		wg.Go(func() {
			for {
				ch := f.Changed()
				f.Read(func(st *model.State) { _ = st.SessionList("") })
				select {
				case <-ch:
				case <-stop:
					return
				}
			}
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		parked := f.Changed()
		for _, l := range logs {
			index++
			l.Index = index
		}
		if batch {
			f.ApplyBatch(logs)
		} else {
			for _, l := range logs {
				f.Apply(l)
			}
		}
		<-parked
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}
