package recipe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/consul/api"
)

// maxTxnOps is the server's limit on one txn (S44).
const maxTxnOps = 128

// FenceError says the guard of a Fence failed: the sequencer is no longer
// valid (or, on Consul, the key changed since the acquire). errors.Is(err,
// ErrStaleSequencer) holds. Nothing in the txn was applied.
type FenceError struct {
	Sequencer Sequencer
	What      string // the server's failure text
	// Fallback is true when the guard was check-session plus check-index
	// (Consul), false for check-sequencer (tenure).
	Fallback bool
}

func (e *FenceError) Error() string {
	return fmt.Sprintf("recipe: sequencer %s rejected: %s", e.Sequencer, e.What)
}

// Unwrap makes errors.Is(err, ErrStaleSequencer) true.
func (e *FenceError) Unwrap() error { return ErrStaleSequencer }

// TxnError says the guard passed but a guarded op failed; OpIndex counts
// the caller's ops from 0. Nothing in the txn was applied.
type TxnError struct {
	Errors api.TxnErrors
}

func (e *TxnError) Error() string {
	parts := make([]string, 0, len(e.Errors))
	for _, x := range e.Errors {
		parts = append(parts, fmt.Sprintf("op %d: %s", x.OpIndex, x.What))
	}
	return "recipe: fenced txn failed: " + strings.Join(parts, "; ")
}

// Fence runs ops in one txn (S44) behind a server-side check that seq is
// still valid, and returns the results of ops. A resource kept in the KV
// store is then written only by the current holder, whatever the writer
// believes (S50).
//
// Against tenure the guard is check-sequencer (S43): valid exactly while the
// key has seq's Session and LockIndex, and sound for ever because tenure
// never issues a (Key, LockIndex, Session) twice (S41).
//
// Consul does not know that verb (it answers "unknown KV operation" or
// "unknown KV verb"; the refusal fails closed). Fence then remembers it and
// uses check-session plus check-index with seq.ModifyIndex. That is weaker in
// two ways. First, no Consul verb compares LockIndex, and Consul can reissue
// a (Key, LockIndex, Session) after a set, cas or delete of the key (S34), so
// the triple itself proves nothing there; only the ModifyIndex pins the
// holding period, and a sequencer without it (ModifyIndex 0) is refused here.
// Second, ModifyIndex moves on every write of the key, holder's own value
// updates and advisory sets included (S32), so the fallback also rejects a
// still-valid holder after any such write: it stays safe but fails closed.
func (c *Client) Fence(ctx context.Context, seq Sequencer, ops api.TxnOps) (api.TxnResults, error) {
	if seq.Key == "" || seq.Session == "" {
		return nil, fmt.Errorf("recipe: fence: sequencer %s lacks key or session", seq)
	}
	if len(ops)+2 > maxTxnOps {
		return nil, fmt.Errorf("recipe: fence: %d ops leave no room for the guard (limit %d)", len(ops), maxTxnOps)
	}
	if !c.noSequencerCheck.Load() {
		guard := api.TxnOps{{KV: &api.KVTxnOp{Verb: "check-sequencer", Key: seq.Key, Session: seq.Session, Index: seq.LockIndex}}}
		res, err := c.guardedTxn(ctx, seq, guard, ops, false)
		var fe *FenceError
		if !errors.As(err, &fe) || !unknownVerb(fe.What) {
			return res, err
		}
		c.noSequencerCheck.Store(true)
	}
	if seq.ModifyIndex == 0 {
		return nil, fmt.Errorf("recipe: fence: server lacks check-sequencer and sequencer %s has no ModifyIndex", seq)
	}
	guard := api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: seq.Key, Session: seq.Session}},
		{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: seq.Key, Index: seq.ModifyIndex}},
	}
	return c.guardedTxn(ctx, seq, guard, ops, true)
}

// unknownVerb recognises a server that does not know check-sequencer:
// Consul 1.22 says "unknown KV operation: check-sequencer", older code
// paths `unknown KV verb "check-sequencer"`.
func unknownVerb(what string) bool {
	return strings.Contains(what, "unknown KV") && strings.Contains(what, "check-sequencer")
}

// guardedTxn sends guard+ops and splits the answer between the guard and ops.
func (c *Client) guardedTxn(ctx context.Context, seq Sequencer, guard, ops api.TxnOps, fallback bool) (api.TxnResults, error) {
	all := append(append(api.TxnOps{}, guard...), ops...)
	ok, resp, _, err := c.API.Txn().Txn(all, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("recipe: fenced txn on %s: %w", seq.Key, err)
	}
	if resp == nil {
		return nil, fmt.Errorf("recipe: fenced txn on %s: empty answer", seq.Key)
	}
	if ok {
		// Check verbs yield one result each, ahead of the caller's.
		if len(resp.Results) < len(guard) {
			return nil, fmt.Errorf("recipe: fenced txn on %s: %d results for %d guards", seq.Key, len(resp.Results), len(guard))
		}
		return resp.Results[len(guard):], nil
	}
	var mine api.TxnErrors
	for _, e := range resp.Errors {
		if e == nil {
			continue
		}
		if e.OpIndex < len(guard) {
			return nil, &FenceError{Sequencer: seq, What: e.What, Fallback: fallback}
		}
		mine = append(mine, &api.TxnError{OpIndex: e.OpIndex - len(guard), What: e.What})
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("recipe: fenced txn on %s: refused without errors", seq.Key)
	}
	return nil, &TxnError{Errors: mine}
}
