package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestIndexBoundsEachCondition (S37, S45): every record's index bounds are
// checked one condition at a time, so no single broken bound hides behind
// another.
func TestIndexBoundsEachCondition(t *testing.T) {
	node := func(f func(n *model.Node)) func(s *model.Snapshot) {
		return func(s *model.Snapshot) {
			n := s.Nodes["n1"]
			f(&n)
			s.Nodes["n1"] = n
		}
	}
	check := func(f func(c *model.Check)) func(s *model.Snapshot) {
		return func(s *model.Snapshot) {
			k := model.CheckKey{Node: "n1", CheckID: "serfHealth"}
			c := s.Checks[k]
			f(&c)
			s.Checks[k] = c
		}
	}
	session := func(f func(se *model.Session)) func(s *model.Snapshot) {
		return func(s *model.Snapshot) {
			se := s.Sessions["s1"]
			f(&se)
			s.Sessions["s1"] = se
		}
	}
	for name, corrupt := range map[string]func(s *model.Snapshot){
		"node under another name":        node(func(n *model.Node) { n.Name = "other" }),
		"node CreateIndex 0":             node(func(n *model.Node) { n.CreateIndex = 0 }),
		"node created after modified":    node(func(n *model.Node) { n.CreateIndex = n.ModifyIndex + 1 }),
		"node modified past its table":   node(func(n *model.Node) { n.ModifyIndex = 99 }),
		"check CreateIndex 0":            check(func(c *model.Check) { c.CreateIndex = 0 }),
		"check created after modified":   check(func(c *model.Check) { c.CreateIndex = c.ModifyIndex + 1 }),
		"check modified past its table":  check(func(c *model.Check) { c.ModifyIndex = 99 }),
		"session CreateIndex 0":          session(func(se *model.Session) { se.CreateIndex = 0 }),
		"session modified after created": session(func(se *model.Session) { se.ModifyIndex = se.CreateIndex + 1 }),
		"session past its table":         session(func(se *model.Session) { se.CreateIndex, se.ModifyIndex = 99, 99 }),
		"tombstone at 0":                 func(s *model.Snapshot) { s.Tombstones["gone"] = 0 },
		"tombstone past the KV table":    func(s *model.Snapshot) { s.Tombstones["gone"] = 99 },
		"lock-delay mark at 0":           func(s *model.Snapshot) { s.DelayedAt["k"] = 0 },
		"lock-delay mark past the table": func(s *model.Snapshot) { s.DelayedAt["k"] = 99 },
	} {
		t.Run(name, func(t *testing.T) {
			s := healthy(t)
			s = edit(s, corrupt)
			wantViolation(t, s.CheckInvariants(), model.InvIndexBounds)
		})
	}
}

// TestReleaseEffectsEachField (S16): an invalidation that releases a key
// may change its Session and ModifyIndex only; changing any other field is
// reported, each on its own. (A wrong ModifyIndex is caught earlier, as an
// index that does not advance.)
func TestReleaseEffectsEachField(t *testing.T) {
	const idx = 8
	for name, corrupt := range map[string]func(e *model.KVEntry){
		"LockIndex":   func(e *model.KVEntry) { e.LockIndex++ },
		"Value":       func(e *model.KVEntry) { e.Value = []byte("changed") },
		"Flags":       func(e *model.KVEntry) { e.Flags = 7 },
		"CreateIndex": func(e *model.KVEntry) { e.CreateIndex++ },
	} {
		t.Run(name, func(t *testing.T) {
			prev := healthy(t)
			next := prev.Clone()
			res := next.Apply(idx, model.Command{DestroySession: &model.DestroySession{ID: "s1"}})
			if err := model.CheckTransition(prev, next, res); err != nil {
				t.Fatalf("uncorrupted release already fails: %v", err)
			}
			next = edit(next, func(n *model.Snapshot) {
				e := n.KV["k"]
				corrupt(&e)
				n.KV["k"] = e
			})
			wantViolation(t, model.CheckTransition(prev, next, res), model.InvInvalidationEffects)
		})
	}
}

// TestInvariantErrorText: a violation reads "<name>: <detail>", so a log line
// names the broken invariant before describing it.
func TestInvariantErrorText(t *testing.T) {
	s := edit(healthy(t), func(s *model.Snapshot) { s.Tombstones["k"] = 1 })
	err := s.CheckInvariants()
	var inv *model.InvariantError
	if !errors.As(err, &inv) {
		t.Fatalf("want an InvariantError, got %v", err)
	}
	if want := inv.Name + ": " + inv.Detail; err.Error() != want || inv.Detail == "" {
		t.Fatalf("error text %q, want %q", err.Error(), want)
	}
}

// TestChangeAtAnOldIndexIsCaught (S37): a key rewritten with the index of the
// state it was already in has not advanced, even though its ModifyIndex
// equals the command's index and the state index does not move.
func TestChangeAtAnOldIndexIsCaught(t *testing.T) {
	prev := healthy(t)
	next := edit(prev, func(s *model.Snapshot) {
		e := s.KV["k"]
		e.Value, e.ModifyIndex = []byte("rewritten"), prev.Index()
		s.KV["k"] = e
	})
	wantViolation(t, model.CheckTransition(prev, next, model.Result{Index: prev.Index()}), model.InvIndexAdvances)
}

// TestDeleteBehaviourChecksEveryKey (S17): the invalidation of a
// delete-behaviour session is checked for each key it held, not only up to
// the first one that was correctly deleted.
func TestDeleteBehaviourChecksEveryKey(t *testing.T) {
	prev := healthy(t)
	if res := prev.Apply(8, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "dk2", Session: "d"}}); !res.OK {
		t.Fatalf("lock dk2: %+v", res)
	}
	next := prev.Clone()
	res := next.Apply(9, model.Command{DestroySession: &model.DestroySession{ID: "d"}})
	if err := model.CheckTransition(prev, next, res); err != nil {
		t.Fatalf("uncorrupted destroy already fails: %v", err)
	}
	// dk is deleted as it should be; dk2, which sorts after it, is left behind.
	next = edit(next, func(s *model.Snapshot) {
		s.KV["dk2"] = prev.Snapshot().KV["dk2"]
		delete(s.Tombstones, "dk2")
	})
	wantViolation(t, model.CheckTransition(prev, next, res), model.InvInvalidationEffects)
}

// TestRejectedChangeNamesTheRejection (S39, S44): when a rejected command or
// an aborted txn changed the state, the report says which: the rejection's
// own text, or the number of failed txn ops.
func TestRejectedChangeNamesTheRejection(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd  model.Command
		want string
	}{
		"rejected": {model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "ghost"}}, `invalid session "ghost"`},
		"aborted": {model.Command{Txn: model.KVTxn(model.KVOp{Verb: model.KVCAS, Key: "k", Index: 99})},
			"1 txn errors"},
	} {
		t.Run(name, func(t *testing.T) {
			prev := healthy(t)
			next := prev.Clone()
			res := next.Apply(8, tc.cmd)
			if !res.Failed() {
				t.Fatalf("command was not refused: %+v", res)
			}
			next = edit(next, func(s *model.Snapshot) { s.Tables.Nodes = 8 })
			err := model.CheckTransition(prev, next, res)
			wantViolation(t, err, model.InvRejectNoChange)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("report %q does not name the rejection %q", err, tc.want)
			}
		})
	}
}
