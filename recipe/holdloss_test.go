package recipe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// TestLockHoldLossPaths covers every way the holder of a lock's key can
// change between two reads of its watcher (S16, S27, S31, S36): the key is
// deleted, released, or (in one atomic txn) released or deleted and taken
// by another session or again by the hold's own. Each must end the hold
// with ErrHolderChanged naming that path.
func TestLockHoldLossPaths(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	other := testSession(t, c, shortSession())
	for _, tc := range []struct {
		name, want string
		take       func(t *testing.T, key, holder string)
	}{
		{"deleted", "was deleted", func(t *testing.T, key, _ string) {
			if _, err := c.API.KV().Delete(key, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"released", "was released", func(t *testing.T, key, holder string) {
			if ok, _, err := c.API.KV().Release(&api.KVPair{Key: key, Session: holder}, nil); err != nil || !ok {
				t.Fatalf("release: %v %v", ok, err)
			}
		}},
		{"taken by another session", "is held by session " + other, func(t *testing.T, key, holder string) {
			ok, resp, _, err := c.API.Txn().Txn(api.TxnOps{
				{KV: &api.KVTxnOp{Verb: api.KVUnlock, Key: key, Session: holder}},
				{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Session: other}},
			}, nil)
			if err != nil || !ok {
				t.Fatalf("txn: %v %+v %v", ok, resp, err)
			}
		}},
		{"released and taken again by its session", "was taken again by its session", func(t *testing.T, key, holder string) {
			ok, resp, _, err := c.API.Txn().Txn(api.TxnOps{
				{KV: &api.KVTxnOp{Verb: api.KVUnlock, Key: key, Session: holder}},
				{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Session: holder}},
			}, nil)
			if err != nil || !ok {
				t.Fatalf("txn: %v %+v %v", ok, resp, err)
			}
		}},
		{"deleted and taken again by its session", "was taken again by its session", func(t *testing.T, key, holder string) {
			// tenure never reissues a LockIndex (S41), so the new one shows.
			ok, resp, _, err := c.API.Txn().Txn(api.TxnOps{
				{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: key}},
				{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Session: holder}},
			}, nil)
			if err != nil || !ok {
				t.Fatalf("txn: %v %+v %v", ok, resp, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Lock(LockOptions{Key: uniq("holdloss"), Session: shortSession()})
			if err != nil {
				t.Fatal(err)
			}
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			select {
			case <-h.Lost():
				t.Fatalf("hold lost before anything happened: %v", h.Err())
			case <-time.After(100 * time.Millisecond):
			}
			tc.take(t, h.Sequencer().Key, h.Sequencer().Session)
			within(t, 30*time.Second, "the hold to end", func() { <-h.Lost() })
			if err := h.Err(); !errors.Is(err, ErrHolderChanged) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("hold ended with %v; want ErrHolderChanged saying %q", err, tc.want)
			}
		})
	}
}
