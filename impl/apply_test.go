package impl

import (
	"context"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// A caller that goes away after its write was proposed must still be told
// the write's real outcome: the entry commits whatever the caller does, so an
// error here would invite a retry that applies it twice.
func TestApplyOutlivesCallerCancelledAfterPropose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := startDev(t, Config{
		// The state machine runs only for a committed entry, so cancelling
		// here is "after propose" by construction.
		Apply: func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
			if cmd.KV != nil && cmd.KV.Key == "left-behind" {
				cancel()
			}
			return st, st.Apply(index, cmd)
		},
	})
	res, err := s.Apply(ctx, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "left-behind", Value: []byte("v")}})
	if err != nil || res.Err != nil {
		t.Fatalf("apply with the caller gone after propose: %v / %v; want the committed result", err, res.Err)
	}
	if ctx.Err() == nil {
		t.Fatal("the test's hook never cancelled the caller's context")
	}
	s.Read(func(st *model.State) {
		if e, ok := st.Get("left-behind"); !ok || e.ModifyIndex != res.Index {
			t.Fatalf("key %+v (present %v), want it written at %d", e, ok, res.Index)
		}
	})
}
