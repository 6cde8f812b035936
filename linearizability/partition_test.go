package linearizability

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestProjectionAgreesWithModel is the lemma the per-key partitioning rests
// on (DESIGN.md): replaying the same commands on the full model and, for a
// key k, on a state holding only k (shared commands, k's commands, txns cut
// to k's ops; local indexes canonicalised after every step) gives the same
// answers on k, the same k, the same sessions, and the same lock-delays on
// k. Index comparisons are translated as a partition does, with the true
// match taken from the full run.
func TestProjectionAgreesWithModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		for _, catalog := range []bool{false, true} {
			h, log := generate(genConfig{Seed: seed, Clients: 6, Keys: 5, Ops: 1500, UnknownRate: 0.03, EventEvery: 5 * time.Millisecond, CatalogTxns: catalog})
			for _, k := range []string{"k00", "k01", "k02", "k03", "k04"} {
				if err := replayProjected(h.Setup, log, k, nil); err != nil {
					t.Fatalf("seed %d key %s (catalog txns %v): %v", seed, k, catalog, err)
				}
			}
		}
	}
}

// The lemma's test can fail: a projection that forgets destroys is caught.
func TestProjectionCatchesBrokenProjection(t *testing.T) {
	h, log := generate(genConfig{Seed: 1, Clients: 6, Keys: 5, Ops: 1500, EventEvery: 5 * time.Millisecond})
	dropDestroys := func(c model.Command) bool { return c.DestroySession != nil }
	caught := 0
	for _, k := range []string{"k00", "k01", "k02", "k03", "k04"} {
		if replayProjected(h.Setup, log, k, dropDestroys) != nil {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("a projection without destroys agreed with the model on every key")
	}
}

// replayProjected replays log on the full model and on key's projection;
// skip, when set, withholds commands from the projection.
func replayProjected(setup []model.Command, log []applied, key string, skip func(model.Command) bool) error {
	full := model.New()
	for i, c := range setup {
		full.Apply(uint64(i+1), c)
	}
	proj := &pstate{m: full.Clone(), tr: map[string]tracker{}}
	proj.canon()
	sc := &scope{keyed: true, key: key}
	for step, a := range log {
		before := full.Clone()
		res := full.Apply(a.index, a.cmd)
		if skip != nil && skip(a.cmd) {
			continue
		}
		if err := projectStep(before, proj, sc, a.cmd, res); err != nil {
			return fmt.Errorf("step %d (%s): %w", step, describeCommand(a.cmd), err)
		}
		if err := sameOnKey(before, full, proj.m, key); err != nil {
			return fmt.Errorf("after step %d (%s): %w", step, describeCommand(a.cmd), err)
		}
	}
	return nil
}

// translate maps a full-run index check to the projected state's local
// index: the local ModifyIndex when the full run matched, else noMatch.
func translate(before *model.State, proj *model.State, op model.KVOp) uint64 {
	if !usesModifyIndex(op) {
		return op.Index
	}
	if e, ok := before.Get(op.Key); ok && e.ModifyIndex == op.Index {
		pe, _ := proj.Get(op.Key)
		return pe.ModifyIndex
	}
	return noMatch
}

func projectStep(before *model.State, proj *pstate, sc *scope, cmd model.Command, res model.Result) error {
	switch {
	case cmd.KV != nil:
		if !touches(*cmd.KV, sc.key) {
			return nil
		}
		o := *cmd.KV
		o.Index = translate(before, proj.m, o)
		pres := proj.m.Apply(proj.m.Index()+1, model.Command{KV: &o})
		proj.canon()
		if (pres.Err != nil) != (res.Err != nil) || pres.OK != res.OK {
			return fmt.Errorf("answer %v/%v, full model %v/%v", pres.OK, pres.Err, res.OK, res.Err)
		}
	case cmd.Txn != nil:
		ops, orig := projectTxn(cmd.Txn.Ops, sc)
		if len(ops) == 0 {
			return nil
		}
		for j := range ops {
			if kv := ops[j].KV; kv != nil {
				o := *kv
				o.Index = translate(before, proj.m, o)
				ops[j].KV = &o
			}
		}
		saved := proj.m.Clone()
		pres := proj.m.Apply(proj.m.Index()+1, model.Command{Txn: &model.Txn{Ops: ops}})
		want := map[int]bool{}
		for _, e := range res.TxnErrors {
			if slices.Contains(orig, e.OpIndex) {
				want[e.OpIndex] = true
			}
		}
		got := map[int]bool{}
		for _, e := range pres.TxnErrors {
			got[orig[e.OpIndex]] = true
		}
		if !mapsEqual(want, got) {
			return fmt.Errorf("txn errors on the key's ops %v, full model %v", got, want)
		}
		if res.Failed() {
			proj.m = saved // aborted elsewhere: nothing happened
			return nil
		}
		var fullOnKey []model.KVEntry
		for _, e := range res.KVResults() {
			if e.Key == sc.key {
				fullOnKey = append(fullOnKey, e)
			}
		}
		projected := pres.KVResults()
		if len(fullOnKey) != len(projected) {
			return fmt.Errorf("%d results on the key, full model %d", len(projected), len(fullOnKey))
		}
		for i := range fullOnKey {
			if !sameEntry(fullOnKey[i], projected[i]) {
				return fmt.Errorf("result %v, full model %v", projected[i], fullOnKey[i])
			}
		}
		proj.canon()
	default: // shared
		pres := proj.m.Apply(proj.m.Index()+1, cmd)
		proj.canon()
		if pres.Failed() != res.Failed() || !slices.Equal(pres.Invalidated, res.Invalidated) {
			return fmt.Errorf("failed=%v invalidated %v, full model failed=%v invalidated %v", pres.Failed(), pres.Invalidated, res.Failed(), res.Invalidated)
		}
		var wantDelays []model.LockDelay
		for _, d := range res.LockDelays {
			if d.Key == sc.key {
				wantDelays = append(wantDelays, d)
			}
		}
		if !slices.Equal(pres.LockDelays, wantDelays) {
			return fmt.Errorf("lock-delays %v, full model %v", pres.LockDelays, wantDelays)
		}
	}
	return nil
}

// sameEntry compares what a client can check: everything but the indexes.
func sameEntry(a, b model.KVEntry) bool {
	return a.Key == b.Key && string(a.Value) == string(b.Value) && a.Flags == b.Flags &&
		a.LockIndex == b.LockIndex && a.Session == b.Session
}

// sameOnKey compares the key, its LockIndex watermark and the live
// sessions; and that the key's version changed in both runs or in neither.
func sameOnKey(before, full, proj *model.State, key string) error {
	fe, fok := full.Get(key)
	pe, pok := proj.Get(key)
	if fok != pok || (fok && !sameEntry(fe, pe)) {
		return fmt.Errorf("key %v (exists %v), full model %v (exists %v)", pe, pok, fe, fok)
	}
	if fok && (fe.CreateIndex == fe.ModifyIndex) != (pe.CreateIndex == pe.ModifyIndex) {
		return fmt.Errorf("key created-and-unchanged differs: %v vs %v", pe, fe)
	}
	if full.LockIssued(key) != proj.LockIssued(key) {
		return fmt.Errorf("lock index watermark %d, full model %d", proj.LockIssued(key), full.LockIssued(key))
	}
	if !slices.Equal(slices.Sorted(maps.Keys(full.Snapshot().Sessions)), slices.Sorted(maps.Keys(proj.Snapshot().Sessions))) {
		return fmt.Errorf("sessions differ")
	}
	return nil
}

// Two commuting steps in either order reach one canonical state, so
// porcupine's memoisation recognises them.
func TestCanonicalStatesMerge(t *testing.T) {
	c := &checker{known: map[string]bool{}}
	base := &pstate{m: model.New(), tr: map[string]tracker{}}
	base.m.Apply(1, model.Command{Register: &model.Register{Node: "n1"}})
	base.canon()
	create := &rec{kind: kindShared, ret: 1, out: Output{OK: true, SessionID: "s"},
		cmds: []model.Command{{CreateSession: &model.CreateSession{ID: "s", Node: "n1", Checks: []string{}}}}}
	set := &rec{kind: kindKV, ret: 1, out: Output{OK: true},
		cmds: []model.Command{{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}}}}
	sc := &scope{all: true}
	one := func(s *pstate, r *rec) *pstate {
		next := c.step(s, stepIn{r: r, sc: sc})
		if len(next) != 1 {
			t.Fatalf("%d successor states", len(next))
		}
		return next[0]
	}
	a := one(one(base, create), set)
	b := one(one(base, set), create)
	if !a.equal(b) || a.hash() != b.hash() {
		t.Fatalf("orders differ after canonicalisation:\n%s\n%s", c.describeState(a), c.describeState(b))
	}
	// Without canonicalisation the two orders would number k differently.
	x, y := base.clone(), base.clone()
	x.m.Apply(x.m.Index()+1, create.cmds[0])
	x.m.Apply(x.m.Index()+1, set.cmds[0])
	y.m.Apply(y.m.Index()+1, set.cmds[0])
	y.m.Apply(y.m.Index()+1, create.cmds[0])
	if x.equal(y) {
		t.Fatal("raw states already equal; the test shows nothing")
	}
}
