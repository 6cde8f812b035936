package conformance

import (
	"fmt"
	"strings"
)

// Sequencers and transactions: S40-S44.

func sequencerCases() []Case {
	return []Case{
		{clause: "S40", name: "valid-while-held-invalid-after-holder-change", run: s40Validity},
		{clause: "S40", name: "no-sequencer-repeats-across-holders", run: s40NoRepeat},
		{clause: "S41", name: "lockindex-never-reissued", run: s41NeverReissued},
		{clause: "S42", name: "check-session", run: s42CheckSession},
		{clause: "S42", name: "check-session-rejects-stale-holder", run: s42StaleHolder},
		{clause: "S42", name: "check-index", run: s42CheckIndex},
		{clause: "S43", name: "check-sequencer", run: s43CheckSequencer},
		{clause: "S44", name: "failing-op-aborts-all", run: s44Atomic},
		{clause: "S44", name: "more-than-128-ops-413", run: s44TooMany},
		{clause: "S52", name: "no-sequencer-reissued-after-reap", run: s52AfterReap},
	}
}

// s52AfterReap locks a key twice, deletes it, waits until the server has
// reaped the deletion, and locks the re-created key: its LockIndex must be
// above both earlier ones, and the prefix's index must not have gone back.
func s52AfterReap(t *caseT) {
	if t.env.reapWait == 0 {
		t.Skipf("the server's reap window is unknown (set -reap-wait)")
	}
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.acquireSeq(k, a, "")
	t.Require(t.Release(k, a, ""), "release failed")
	s2 := t.acquireSeq(k, b, "")
	t.Require(t.Delete(k, ""), "delete failed")
	_, r := t.List(k)
	before := r.Index()
	t.Sleep(t.env.reapWait)
	s3 := t.acquireSeq(k, a, "")
	t.Check(s3.li > s2.li, "re-created key locked at LockIndex %d after a reap; %d was issued before", s3.li, s2.li)
	_, r = t.List(k)
	t.Check(r.Index() >= before, "index of prefix %s went back across a reap: %d after %d", k, r.Index(), before)
}

// seq is a sequencer: what a holder learns from its acquire.
type seq struct {
	key, sid string
	li       uint64
}

// acquireSeq acquires key for sid and returns its sequencer.
func (t *caseT) acquireSeq(key, sid, value string) seq {
	t.Require(t.Acquire(key, sid, value), "acquire of %s by %s answered false", key, sid)
	p := t.MustGet(key)
	t.Require(p.Session == sid, "after acquire %s is held by %q, not %s", key, p.Session, sid)
	return seq{key: key, sid: sid, li: p.LockIndex}
}

// valid says whether s is valid now: key exists, held by s.sid at s.li.
func (t *caseT) valid(s seq) bool {
	p, _ := t.Get(s.key)
	return p != nil && p.Session == s.sid && p.LockIndex == s.li
}

func s40Validity(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	s1 := t.acquireSeq(k, a, "v1")
	t.Check(t.valid(s1), "fresh sequencer %+v invalid", s1)
	t.Require(t.Acquire(k, a, "v2"), "re-acquire by the holder failed")
	t.Check(t.valid(s1), "sequencer %+v invalidated by the holder's own re-acquire", s1)
	t.Require(t.Release(k, a, ""), "release failed")
	t.Check(!t.valid(s1), "sequencer %+v still valid after release", s1)
	s2 := t.acquireSeq(k, a, "v3")
	t.Check(!t.valid(s1), "sequencer %+v valid again after release and re-acquire (now %+v)", s1, s2)
	t.Require(t.Release(k, a, ""), "release failed")
	s3 := t.acquireSeq(k, b, "v4")
	t.Check(!t.valid(s1) && !t.valid(s2), "old sequencers valid while %+v holds", s3)
	c := t.CreateUnboundSession(nil)
	s4 := t.acquireSeq(t.Key("k2"), c, "")
	t.Destroy(c)
	t.Check(!t.valid(s4), "sequencer %+v valid after its session was destroyed", s4)
	s5 := t.acquireSeq(s4.key, a, "")
	t.Check(!t.valid(s4), "sequencer %+v valid again after invalidation and a new holder %+v", s4, s5)
}

func s40NoRepeat(t *caseT) {
	k := t.Key("k")
	ss := []string{t.CreateUnboundSession(nil), t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)}
	seen := map[uint64]string{}
	for round := 0; round < 3; round++ {
		for _, sid := range ss {
			s := t.acquireSeq(k, sid, "")
			if prev, dup := seen[s.li]; dup {
				t.Errorf("LockIndex %d issued to %s and again to %s: an old sequencer became valid again", s.li, prev, sid)
			}
			seen[s.li] = sid
			if round == 1 && sid == ss[1] {
				// A holder lost by invalidation rather than release.
				t.Destroy(sid)
				ss[1] = t.CreateUnboundSession(nil)
				continue
			}
			t.Require(t.Release(k, sid, ""), "release failed")
		}
	}
}

func s41NeverReissued(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	var high uint64
	next := func(what string, s seq) {
		t.Check(s.li > high, "%s: LockIndex %d not above every earlier one (%d)", what, s.li, high)
		high = max(high, s.li)
	}
	never := func(what string) {
		p, _ := t.Get(k)
		if p != nil {
			t.Check(p.LockIndex <= high, "%s: LockIndex %d above anything issued (%d)", what, p.LockIndex, high)
		}
	}
	next("first acquire", t.acquireSeq(k, a, ""))
	t.Set(k, "set")
	never("after set")
	t.Require(t.Release(k, a, ""), "release failed")
	next("acquire after set and release", t.acquireSeq(k, b, ""))
	t.Require(t.Delete(k, ""), "delete failed")
	next("acquire after delete", t.acquireSeq(k, a, ""))
	t.Require(t.Release(k, a, ""), "release failed")
	t.Require(t.Delete(k, ""), "delete failed")
	t.Set(k, "re-created by a plain set")
	never("after re-create")
	next("acquire after delete and re-create", t.acquireSeq(k, b, ""))
	t.Require(t.CAS(k, "cas", t.MustGet(k).ModifyIndex), "cas failed")
	t.Require(t.Release(k, b, ""), "release failed")
	next("acquire after cas", t.acquireSeq(k, a, ""))
	// Invalidation with behavior=delete, then re-create by acquire.
	d := t.CreateUnboundSession(map[string]any{"Behavior": "delete"})
	t.Require(t.Release(k, a, ""), "release failed")
	next("acquire by a delete-behavior session", t.acquireSeq(k, d, ""))
	t.Destroy(d)
	next("acquire after the holder's key was deleted by invalidation", t.acquireSeq(k, b, ""))
}

func s42CheckSession(t *caseT) {
	k, missing := t.Key("k"), t.Key("missing")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	r, _ := t.Txn(txnKV{Verb: "check-session", Key: k, Session: a})
	t.Check(r.Code == 200, "check-session by the holder: want 200, got %s", r)
	t.txnFails("check-session naming another session", 0,
		fmt.Sprintf("failed session check for key %q, current session %q != %q", k, a, b),
		txnKV{Verb: "check-session", Key: k, Session: b})
	t.txnFails("check-session of a missing key", 0,
		fmt.Sprintf("failed to check session, key %q doesn't exist", missing),
		txnKV{Verb: "check-session", Key: missing, Session: a})
	t.Require(t.Release(k, a, ""), "release failed")
	t.txnFails("check-session after release", 0,
		fmt.Sprintf("failed session check for key %q, current session %q != %q", k, "", a),
		txnKV{Verb: "check-session", Key: k, Session: a})
}

// s42StaleHolder: a holder that lost its session must fail a guarded write.
func s42StaleHolder(t *caseT) {
	k, guarded := t.Key("lock"), t.Key("guarded")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, ""), "acquire failed")
	t.Destroy(a)
	t.Require(t.Acquire(k, b, ""), "acquire by the new holder failed")
	t.txnFails("guarded write by a stale holder", 0,
		fmt.Sprintf("failed session check for key %q, current session %q != %q", k, b, a),
		txnKV{Verb: "check-session", Key: k, Session: a},
		txnKV{Verb: "set", Key: guarded, Value: []byte("stale")})
	p, _ := t.Get(guarded)
	t.Check(p == nil, "the stale holder's guarded write was applied")
	// A stale holder whose session lives on (lock released, re-taken by b).
	c := t.CreateUnboundSession(nil)
	t.Require(t.Release(k, b, ""), "release failed")
	t.Require(t.Acquire(k, c, ""), "acquire failed")
	t.txnFails("guarded write by a released, still live holder", 0,
		fmt.Sprintf("failed session check for key %q, current session %q != %q", k, c, b),
		txnKV{Verb: "check-session", Key: k, Session: b},
		txnKV{Verb: "set", Key: guarded, Value: []byte("stale")})
	p, _ = t.Get(guarded)
	t.Check(p == nil, "the released holder's guarded write was applied")
}

func s42CheckIndex(t *caseT) {
	k, missing := t.Key("k"), t.Key("missing")
	t.Set(k, "v")
	mi := t.MustGet(k).ModifyIndex
	r, _ := t.Txn(txnKV{Verb: "check-index", Key: k, Index: mi})
	t.Check(r.Code == 200, "check-index with the current index: want 200, got %s", r)
	t.txnFails("check-index with a stale index", 0,
		fmt.Sprintf("failed index check for key %q, current modify index %d != %d", k, mi, mi+1),
		txnKV{Verb: "check-index", Key: k, Index: mi + 1})
	t.txnFails("check-index of a missing key", 0,
		fmt.Sprintf("failed to check index, key %q doesn't exist", missing),
		txnKV{Verb: "check-index", Key: missing, Index: mi})
}

// txnFails sends ops and expects 409 with exactly one error at opIndex whose
// What equals want ("" accepts any non-empty text naming the key).
func (t *caseT) txnFails(what string, opIndex int, want string, ops ...txnKV) {
	r, a := t.Txn(ops...)
	if !t.Check(r.Code == 409, "%s: want 409, got %s", what, r) {
		return
	}
	t.Check(a.Results == nil, "%s: failed txn returned results %v", what, a.Results)
	if !t.Check(len(a.Errors) == 1, "%s: want one error, got %+v", what, a.Errors) {
		return
	}
	e := a.Errors[0]
	t.Equal(what+": OpIndex", e.OpIndex, opIndex)
	if want != "" {
		t.Equal(what+": What", e.What, want)
	} else {
		t.Check(strings.Contains(e.What, ops[opIndex].Key), "%s: error %q does not name key %s", what, e.What, ops[opIndex].Key)
	}
}

func s43CheckSequencer(t *caseT) {
	k, missing, guarded := t.Key("k"), t.Key("missing"), t.Key("guarded")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	s := t.acquireSeq(k, a, "")
	op := func(key, sid string, li uint64) txnKV {
		return txnKV{Verb: "check-sequencer", Key: key, Session: sid, Index: li}
	}
	r, _ := t.Txn(op(k, a, s.li), txnKV{Verb: "set", Key: guarded, Value: []byte("ok")})
	t.Check(r.Code == 200, "check-sequencer of the valid sequencer: want 200, got %s", r)
	g, _ := t.Get(guarded)
	t.Check(g != nil, "write guarded by a valid sequencer not applied")
	t.txnFails("check-sequencer with the wrong LockIndex", 0, "", op(k, a, s.li+1))
	t.txnFails("check-sequencer with the wrong session", 0, "", op(k, b, s.li))
	t.txnFails("check-sequencer of a missing key", 0, "", op(missing, a, 1))
	t.Require(t.Release(k, a, ""), "release failed")
	t.txnFails("check-sequencer after release", 1, "", txnKV{Verb: "get", Key: k}, op(k, a, s.li))
	s2 := t.acquireSeq(k, a, "")
	t.txnFails("check-sequencer of the holder's previous sequencer", 0, "", op(k, a, s.li))
	r, _ = t.Txn(op(k, a, s2.li))
	t.Check(r.Code == 200, "check-sequencer of the new sequencer: want 200, got %s", r)
}

func s44Atomic(t *caseT) {
	k1, k2, k3, k4 := t.Key("k1"), t.Key("k2"), t.Key("k3"), t.Key("k4")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Set(k2, "orig")
	b2 := t.MustGet(k2)
	t.txnFails("txn with a stale cas", 2, "",
		txnKV{Verb: "set", Key: k1, Value: []byte("1")},
		txnKV{Verb: "lock", Key: k3, Session: a},
		txnKV{Verb: "cas", Key: k2, Value: []byte("2"), Index: b2.ModifyIndex + 1},
		txnKV{Verb: "set", Key: k4, Value: []byte("4")})
	for _, k := range []string{k1, k3, k4} {
		p, _ := t.Get(k)
		t.Check(p == nil, "aborted txn wrote %s", k)
	}
	t.Unchanged("aborted txn", k2, b2)
	t.Require(t.Acquire(k3, b, ""), "acquire failed")
	b3 := t.MustGet(k3)
	t.txnFails("txn locking a held key", 1, "",
		txnKV{Verb: "delete", Key: k2},
		txnKV{Verb: "lock", Key: k3, Session: a})
	t.Unchanged("aborted txn", k2, b2)
	t.Unchanged("aborted txn", k3, b3)
	r, ans := t.Txn(txnKV{Verb: "set", Key: k1, Value: []byte("1")},
		txnKV{Verb: "cas", Key: k2, Value: []byte("2"), Index: b2.ModifyIndex})
	t.Check(r.Code == 200 && len(ans.Errors) == 0 && len(ans.Results) == 2, "valid txn: want 200 with 2 results, got %s", r)
	t.Equal("k1 after txn", string(t.MustGet(k1).Value), "1")
	t.Equal("k2 after txn", string(t.MustGet(k2).Value), "2")
}

func s44TooMany(t *caseT) {
	ops := make([]txnKV, 129)
	for i := range ops {
		ops[i] = txnKV{Verb: "set", Key: t.Key(fmt.Sprintf("big/%03d", i)), Value: []byte("x")}
	}
	r, _ := t.Txn(ops...)
	t.Check(r.Code == 413, "txn of 129 ops: want 413, got %s", r)
	got, _ := t.List(t.Key("big/"))
	t.Check(len(got) == 0, "refused txn wrote %d keys", len(got))
	r, ans := t.Txn(ops[:128]...)
	t.Check(r.Code == 200 && len(ans.Results) == 128, "txn of 128 ops: want 200 with 128 results, got %s", r)
	got, _ = t.List(t.Key("big/"))
	t.Equal("keys written by the 128-op txn", len(got), 128)
}
