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
