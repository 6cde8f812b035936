package model_test

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestSnapshotRestoreRoundTrip: a snapshot restores to an equal state, and
// editing the snapshot afterwards does not reach back into either state.
func TestSnapshotRestoreRoundTrip(t *testing.T) {
	s := healthy(t)
	snap := s.Snapshot()
	got, err := model.Restore(snap)
	if err != nil {
		t.Fatalf("restore of a healthy state: %v", err)
	}
	if !got.Equal(s) {
		t.Fatal("restored state differs from the original")
	}
	delete(snap.KV, "k")
	snap.LockIssued["k"] = 99
	if _, ok := s.Get("k"); !ok || s.LockIssued("k") != 1 {
		t.Fatal("editing a snapshot changed the state it came from")
	}
	if _, ok := got.Get("k"); !ok || got.LockIssued("k") != 1 {
		t.Fatal("editing a snapshot changed the state restored from it")
	}
}

// TestRestoreRefusesBadSnapshots: each way a snapshot can be inconsistent is
// refused on its own, with a reason naming it.
func TestRestoreRefusesBadSnapshots(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(s *model.Snapshot)
		want string
	}{
		"node under another name": {func(s *model.Snapshot) {
			n := s.Nodes["n1"]
			delete(s.Nodes, "n1")
			s.Nodes["n2"] = n
		}, `node "n1" stored under "n2"`},
		"check under another key": {func(s *model.Snapshot) {
			k := model.CheckKey{Node: "n1", CheckID: "serfHealth"}
			c := s.Checks[k]
			c.CheckID = "other"
			s.Checks[k] = c
		}, "check n1/other stored under n1/serfHealth"},
		"session under another ID": {func(s *model.Snapshot) {
			se := s.Sessions["d"]
			se.ID = "e"
			s.Sessions["d"] = se
		}, `session "e" stored under "d"`},
		"key under another name": {func(s *model.Snapshot) {
			e := s.KV["free"]
			e.Key = "elsewhere"
			s.KV["free"] = e
		}, `key "elsewhere" stored under "free"`},
		"invariant broken": {func(s *model.Snapshot) { delete(s.Sessions, "s1") }, model.InvHolderExists},
	} {
		t.Run(name, func(t *testing.T) {
			snap := healthy(t).Snapshot()
			tc.edit(&snap)
			_, err := model.Restore(snap)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore: %v; want an error containing %q", err, tc.want)
			}
			// Unchecked restore takes it as it is: that is its purpose.
			if model.RestoreUnchecked(snap) == nil {
				t.Fatal("unchecked restore returned nothing")
			}
		})
	}
}

// TestRenumberKeepsOrderAndTable: Renumber hands every recorded key to the
// caller once, zeroes catalog and session indexes, and sets the KV table.
func TestRenumberKeepsOrderAndTable(t *testing.T) {
	s := healthy(t)
	s.Apply(8, model.Command{KV: &model.KVOp{Verb: model.KVDelete, Key: "free"}})
	seen := map[string]model.KeyIndexes{}
	s.Renumber(func(k string, ix model.KeyIndexes) model.KeyIndexes {
		seen[k] = ix
		return model.KeyIndexes{Create: min(ix.Create, 1), Modify: min(ix.Modify, 2), Deleted: min(ix.Deleted, 2), DelayedAt: min(ix.DelayedAt, 3)}
	}, func() uint64 { return 3 })
	if len(seen) != 3 || seen["free"].Deleted != 8 || seen["k"].Modify == 0 {
		t.Fatalf("renumber saw %+v; want k, dk and the deleted free", seen)
	}
	if e, _ := s.Get("k"); e.CreateIndex != 1 || e.ModifyIndex != 2 {
		t.Fatalf("k renumbered to %+v", e)
	}
	if at, _ := s.Tombstone("free"); at != 2 {
		t.Fatalf("free's tombstone renumbered to %d, want 2", at)
	}
	if se, _ := s.Session("s1"); se.CreateIndex|se.ModifyIndex != 0 {
		t.Fatalf("session indexes kept: %+v", se)
	}
	if n, _ := s.Node("n1"); n.CreateIndex|n.ModifyIndex != 0 {
		t.Fatalf("node indexes kept: %+v", n)
	}
	if got := s.Tables(); got != (model.TableIndexes{KV: 3}) {
		t.Fatalf("tables %+v, want only KV 3", got)
	}
}
