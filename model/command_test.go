package model_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestLockKeys (S22, S24): the leader checks lock-delay for exactly the keys
// a command would acquire, stand-alone or inside a txn, and no others.
func TestLockKeys(t *testing.T) {
	kv := func(verb model.KVVerb, key string) model.KVOp { return model.KVOp{Verb: verb, Key: key, Session: "s"} }
	for name, tc := range map[string]struct {
		cmd  model.Command
		want []string
	}{
		"plain lock":      {model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "a", Session: "s"}}, []string{"a"}},
		"plain set":       {model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "a"}}, nil},
		"plain unlock":    {model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: "a", Session: "s"}}, nil},
		"session command": {model.Command{DestroySession: &model.DestroySession{ID: "s"}}, nil},
		"txn locks and writes": {model.Command{Txn: model.KVTxn(
			kv(model.KVLock, "a"), kv(model.KVSet, "b"), kv(model.KVUnlock, "c"), kv(model.KVLock, "d"),
		)}, []string{"a", "d"}},
		"txn without locks": {model.Command{Txn: model.KVTxn(kv(model.KVSet, "a"))}, nil},
	} {
		if got := tc.cmd.LockKeys(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: LockKeys = %q, want %q", name, got, tc.want)
		}
	}
}

// TestIsReadOnly (S44): only a txn made of read verbs may skip raft; a
// stand-alone command is always a write, and one write verb in a txn makes it
// a write.
func TestIsReadOnly(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd  model.Command
		want bool
	}{
		"plain set": {model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "a"}}, false},
		"reads only": {model.Command{Txn: model.KVTxn(
			model.KVOp{Verb: model.KVGet, Key: "a"}, model.KVOp{Verb: model.KVCheckIndex, Key: "a", Index: 3},
		)}, true},
		"read then write": {model.Command{Txn: model.KVTxn(
			model.KVOp{Verb: model.KVGet, Key: "a"}, model.KVOp{Verb: model.KVDelete, Key: "a"},
		)}, false},
	} {
		if got := tc.cmd.IsReadOnly(); got != tc.want {
			t.Errorf("%s: IsReadOnly = %v, want %v", name, got, tc.want)
		}
	}
}

// TestSessionTTLDuration (S18): the stored TTL string parses to the session's
// TTL; no TTL, or one that does not parse, means none.
func TestSessionTTLDuration(t *testing.T) {
	for ttl, want := range map[string]time.Duration{"": 0, "30s": 30 * time.Second, "1h": time.Hour, "soon": 0} {
		if got := (model.Session{TTL: ttl}).TTLDuration(); got != want {
			t.Errorf("TTL %q: %v, want %v", ttl, got, want)
		}
	}
}

// TestTTLDeadlinesNext (S18, S20): the single timer is armed for the earliest
// deadline, whatever order the sessions were reset in, and for none when no
// session has a TTL.
func TestTTLDeadlinesNext(t *testing.T) {
	t0 := time.Unix(0, 0)
	var d model.TTLDeadlines
	if _, ok := d.Next(); ok {
		t.Fatal("an empty book has a next deadline")
	}
	d.Reset("late", t0, 40*time.Second, 1)
	d.Reset("early", t0, 10*time.Second, 1)
	d.Reset("middle", t0, 20*time.Second, 1)
	next, ok := d.Next()
	if !ok || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("Next = %v, %v; want the earliest deadline, 10s", next.Sub(t0), ok)
	}
	d.Remove("early")
	if next, _ := d.Next(); !next.Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("after removing the earliest, Next = %v, want 20s", next.Sub(t0))
	}
}

// TestErrorKindZeroIsUnclassified (S8, S39): kinds start at 1, so an Error
// whose Kind was never set is none of them and a server maps it to the
// internal-error status rather than mistaking it for a caller's mistake.
func TestErrorKindZeroIsUnclassified(t *testing.T) {
	kinds := []model.ErrorKind{model.ErrInvalid, model.ErrMissing, model.ErrConflict, model.ErrTooLarge, model.ErrInternal}
	seen := map[model.ErrorKind]bool{}
	for _, k := range kinds {
		if k == 0 || seen[k] {
			t.Fatalf("kinds %v: want distinct and non-zero", kinds)
		}
		seen[k] = true
	}
}
