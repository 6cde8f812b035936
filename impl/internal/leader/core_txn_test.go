package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestLeaderCoreTxnLockRefusedInCommitWindow is the txn form of
// TestLeaderCoreReportsStateMachineRefusal: the leader's check passes a txn
// lock, then the holder's invalidation is applied before the txn (the window
// between check and apply that S22 closes). Only the stamp on the txn's lock
// op lets the state machine see that the delay is newer than the check, so
// the whole txn must be refused and rolled back, and Apply must report it as
// a lock-delay refusal (S25, S44).
func TestLeaderCoreTxnLockRefusedInCommitWindow(t *testing.T) {
	h := newCoreHarness(t, "a", "b")
	a := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n", LockDelay: 5 * time.Second}}).SessionID
	b := h.apply(t, model.Command{CreateSession: &model.CreateSession{Node: "n"}}).SessionID
	h.apply(t, lockCmd("k", a))
	var stamped []model.KVOp
	h.before = func(cmd model.Command) {
		if cmd.Txn == nil {
			return
		}
		h.before = nil
		stamped, _ = cmd.Txn.KVOps()
		// The invalidation lands between the check and the txn's apply.
		if _, err := h.propose(context.Background(), model.Command{DestroySession: &model.DestroySession{ID: a}}); err != nil {
			t.Errorf("destroy in the window: %v", err)
		}
	}
	txn := model.Command{Txn: model.KVTxn(
		model.KVOp{Verb: model.KVSet, Key: "x", Value: []byte("v")},
		model.KVOp{Verb: model.KVLock, Key: "k", Session: b},
	)}
	res, err := h.core.Apply(context.Background(), txn)
	var lde *LockDelayError
	if !errors.As(err, &lde) || lde.Key != "k" || lde.Remaining != 5*time.Second || res.Index == 0 {
		t.Fatalf("txn lock in the window: result %+v, err %v; want an applied refusal with *LockDelayError", res, err)
	}
	if len(res.TxnErrors) != 1 || res.TxnErrors[0].OpIndex != 1 || len(res.TxnResults) != 0 {
		t.Fatalf("txn errors %+v, results %+v; want the lock op (1) refused and nothing applied", res.TxnErrors, res.TxnResults)
	}
	// The stamp is on the lock op only; the set carries none.
	if len(stamped) != 2 || stamped[0].LockDelaySeen != 0 || stamped[1].LockDelaySeen == 0 {
		t.Fatalf("proposed ops %+v; want only the lock op stamped", stamped)
	}
	// The caller's command is not modified.
	if txn.Txn.Ops[1].KV.LockDelaySeen != 0 {
		t.Fatalf("caller's txn was stamped: %+v", *txn.Txn.Ops[1].KV)
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if e, ok := h.st.Get("k"); ok && e.Session != "" {
		t.Fatalf("the refused txn took the key: %+v", e)
	}
	if _, ok := h.st.Get("x"); ok {
		t.Fatal("the refused txn's set was not rolled back")
	}
}
