package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// TestFSMAppliesOnlyDurableEntries: the FSM asks whether each entry is on
// this server's disk before applying it, and refuses one that is not.
func TestFSMAppliesOnlyDurableEntries(t *testing.T) {
	f := newFSM(newWireCodec(), guardEffects{leader.NewLockDelays(clocktest.NewManual(time.Unix(0, 0))), nil})
	var asked []uint64
	notYet := errors.New("not on disk")
	f.awaitDurable = func(idx uint64) error {
		asked = append(asked, idx)
		if idx > 1 {
			return notYet
		}
		return nil
	}
	set := func(key string) *raft.Log {
		return commandLog(t, f.codec, uint64(len(asked)+1), model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}})
	}
	f.Apply(set("durable"))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an entry that is not on disk was applied without complaint")
			}
		}()
		f.Apply(set("not-durable"))
	}()
	if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
		t.Fatalf("durability asked for %v, want [1 2]", asked)
	}
	f.Read(func(st *model.State) {
		if _, ok := st.Get("durable"); !ok {
			t.Error("the durable entry was not applied")
		}
		if _, ok := st.Get("not-durable"); ok {
			t.Error("the entry that is not on disk was applied")
		}
	})
}

// TestFSMStopsAfterAFailedSync: with Options.Fatal, a failed durability
// wait is reported once instead of a panic, and from then on nothing is
// applied, not even entries the disk would now accept.
func TestFSMStopsAfterAFailedSync(t *testing.T) {
	f := newFSM(newWireCodec(), guardEffects{leader.NewLockDelays(clocktest.NewManual(time.Unix(0, 0))), nil})
	broken := errors.New("fsync: input/output error")
	failing := true
	f.awaitDurable = func(uint64) error {
		if failing {
			return broken
		}
		return nil
	}
	var fatal []error
	f.fatal = func(err error) { fatal = append(fatal, err) }
	set := func(index uint64, key string) *raft.Log {
		return commandLog(t, f.codec, index, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}})
	}
	if got := f.Apply(set(1, "first")); !errors.Is(got.(error), ErrNotDurable) {
		t.Fatalf("the entry whose sync failed answered %v, want ErrNotDurable", got)
	}
	failing = false
	if got := f.Apply(set(2, "second")); got != ErrNotDurable {
		t.Fatalf("an entry after the failure answered %v, want ErrNotDurable", got)
	}
	if len(fatal) != 1 || !errors.Is(fatal[0], broken) || !errors.Is(fatal[0], ErrNotDurable) {
		t.Fatalf("Fatal told %v, want the sync's error once", fatal)
	}
	f.Read(func(st *model.State) {
		if st.Index() != 0 {
			t.Errorf("a stopped FSM applied up to index %d", st.Index())
		}
	})
}
