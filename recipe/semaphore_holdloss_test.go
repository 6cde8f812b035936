package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// TestSemaphoreHoldLossPaths covers every way a semaphore slot can stop
// being held between two reads of its watcher (S51): the contender key is
// deleted or released (or released and taken again by the slot's own
// session), .lock stops listing the holder, or .lock becomes
// unreadable (foreign flags, another limit, bad JSON). Each must end the
// slot with an error naming that path.
func TestSemaphoreHoldLossPaths(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	rewriteLock := func(t *testing.T, key string, edit func(p *api.KVPair)) {
		t.Helper()
		p, _, err := c.API.KV().Get(key, nil)
		if err != nil || p == nil {
			t.Fatalf("read %s: %v %v", key, p, err)
		}
		edit(p)
		if ok, _, err := c.API.KV().CAS(p, nil); err != nil || !ok {
			t.Fatalf("rewrite %s: %v %v", key, ok, err)
		}
	}
	for _, tc := range []struct {
		name    string
		wantErr error
		want    string
		take    func(t *testing.T, contender, lockKey, holder string)
	}{
		{"contender key deleted", ErrHolderChanged, "is no longer held by", func(t *testing.T, contender, _, _ string) {
			if _, err := c.API.KV().Delete(contender, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"contender key released", ErrHolderChanged, "is no longer held by", func(t *testing.T, contender, _, holder string) {
			if ok, _, err := c.API.KV().Release(&api.KVPair{Key: contender, Session: holder}, nil); err != nil || !ok {
				t.Fatalf("release: %v %v", ok, err)
			}
		}},
		{"contender key released and taken again by its session", ErrHolderChanged, "was taken again by its session", func(t *testing.T, contender, _, holder string) {
			ok, resp, _, err := c.API.Txn().Txn(api.TxnOps{
				{KV: &api.KVTxnOp{Verb: api.KVUnlock, Key: contender, Session: holder, Flags: api.SemaphoreFlagValue}},
				{KV: &api.KVTxnOp{Verb: api.KVLock, Key: contender, Session: holder, Flags: api.SemaphoreFlagValue}},
			}, nil)
			if err != nil || !ok {
				t.Fatalf("txn: %v %+v %v", ok, resp, err)
			}
		}},
		{".lock drops the holder", ErrHolderChanged, "no longer lists", func(t *testing.T, _, lockKey, _ string) {
			rewriteLock(t, lockKey, func(p *api.KVPair) { p.Value = []byte(`{"Limit":1,"Holders":{}}`) })
		}},
		{".lock has foreign flags", ErrConflict, "has flags", func(t *testing.T, _, lockKey, _ string) {
			rewriteLock(t, lockKey, func(p *api.KVPair) { p.Flags = 7 })
		}},
		{".lock has another limit", ErrLimitConflict, "lock: 3", func(t *testing.T, _, lockKey, holder string) {
			rewriteLock(t, lockKey, func(p *api.KVPair) {
				p.Value, _ = json.Marshal(semaphoreRecord{Limit: 3, Holders: map[string]bool{holder: true}})
			})
		}},
		{".lock is not JSON", nil, "decode", func(t *testing.T, _, lockKey, _ string) {
			rewriteLock(t, lockKey, func(p *api.KVPair) { p.Value = []byte("{") })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := c.Semaphore(SemaphoreOptions{Prefix: uniq("semloss"), Limit: 1, Session: shortSession()})
			if err != nil {
				t.Fatal(err)
			}
			slot, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer slot.Release(ctx)
			select {
			case <-slot.Lost():
				t.Fatalf("slot lost before anything happened: %v", slot.Err())
			case <-time.After(100 * time.Millisecond):
			}
			seq := slot.Sequencer()
			tc.take(t, seq.Key, s.lockKey, seq.Session)
			within(t, 30*time.Second, "the slot to end", func() { <-slot.Lost() })
			err = slot.Err()
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("slot ended with %v; want %v saying %q", err, tc.wantErr, tc.want)
			}
		})
	}
}
