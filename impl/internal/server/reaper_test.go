package server

import (
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

func TestReapMarksDueOnlyAfterWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := reapMarks{window: time.Minute}
	steps := []struct {
		after   time.Duration
		applied uint64
		want    uint64
	}{
		{0, 10, 0},
		{30 * time.Second, 20, 0},
		{60 * time.Second, 30, 10},  // the mark at t0 is a minute old
		{89 * time.Second, 40, 10},  // the mark at 30 s is not yet
		{90 * time.Second, 50, 20},  // now it is
		{300 * time.Second, 60, 50}, // a long gap: the newest old-enough mark
	}
	for _, s := range steps {
		if got := r.due(t0.Add(s.after), s.applied); got != s.want {
			t.Fatalf("at +%v (applied %d): due %d, want %d", s.after, s.applied, got, s.want)
		}
	}
	if len(r.marks) > 2 {
		t.Fatalf("kept %d marks; old ones must be dropped", len(r.marks))
	}
}

// TestLeaderReapsOldDeletions runs a dev server with a short window on a
// manual clock: a deletion is reaped once it is a window old, and a
// re-created key's first lock is above every LockIndex the old key had (S52).
func TestLeaderReapsOldDeletions(t *testing.T) {
	s, clock := startDev(t, Config{ReapWindow: time.Minute, ReapInterval: 10 * time.Second})
	sid := mustApply(t, s, model.Command{CreateSession: &model.CreateSession{Node: "dev"}}).SessionID
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: sid}})
	mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVDelete, Key: "k"}})

	tombstoned := func() (ok bool) {
		s.Read(func(st *model.State) { _, ok = st.Tombstone("k") })
		return ok
	}
	for range 5 { // 50 s: younger than the window
		clock.Advance(10 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	if !tombstoned() {
		t.Fatal("deletion reaped before the window passed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for tombstoned() {
		if time.Now().After(deadline) {
			t.Fatal("deletion not reaped after the window")
		}
		clock.Advance(10 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	res := mustApply(t, s, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: sid}})
	var li uint64
	s.Read(func(st *model.State) { e, _ := st.Get("k"); li = e.LockIndex })
	if li != 2 {
		t.Fatalf("re-created key locked at LockIndex %d (result %+v), want 2: above the reaped 1", li, res)
	}
}
