package conformance

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"
)

// KV locks and writes: S26-S39.

func kvCases() []Case {
	return []Case{
		{clause: "S26", name: "acquire-absent-creates-held-key", run: s26AcquireAbsent},
		{clause: "S27", name: "acquire-unlocked-bumps-lockindex", run: s27AcquireUnlocked},
		{clause: "S28", name: "reacquire-by-holder-keeps-lockindex", run: s28Reacquire},
		{clause: "S29", name: "acquire-held-by-other-refused", run: s29HeldByOther},
		{clause: "S30", name: "acquire-without-valid-session-errors", run: s30NoSession},
		{clause: "S31", name: "release-by-holder", run: s31ReleaseHolder},
		{clause: "S31", name: "release-by-non-holder-refused", run: s31ReleaseNonHolder},
		{clause: "S31", name: "release-unlocked-or-absent-refused", run: s31ReleaseUnlocked},
		{clause: "S32", name: "set-and-cas-on-locked-key-keep-session", run: s32Advisory},
		{clause: "S33", name: "set-and-cas-keep-lockindex", run: s33KeepLockIndex},
		{clause: "S34", name: "set-and-cas-reset-lockindex", run: s34ResetLockIndex},
		{clause: "S35", name: "cas", run: s35CAS},
		{clause: "S36", name: "delete-locked-key", run: s36DeleteLocked},
		{clause: "S36", name: "delete-cas", run: s36DeleteCAS},
		{clause: "S36", name: "delete-recurse", run: s36DeleteRecurse},
		{clause: "S37", name: "modifyindex-monotonic-noop-keeps", run: s37ModifyIndex},
		{clause: "S38", name: "value-and-flags-replaced", run: s38ValueFlags},
		{clause: "S39", name: "bad-input-400-413-changes-nothing", run: s39BadInput},
		{clause: "S39", name: "request-limits-413-change-nothing", run: s39RequestLimits},
		{clause: "S64", name: "acquire-names-its-sequencer", run: s64AcquireNames},
	}
}

// s64AcquireNames checks the headers of S64 against the key as read after
// each write: named on every successful acquire, absent on a refusal and on
// writes that are not acquires.
func s64AcquireNames(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	step := func(what, value, query, wantText string, names bool) {
		r := t.PutRaw(k, value, query)
		t.Require(r.Code == 200 && r.Text() == wantText, "%s: want 200 %s, got %s", what, wantText, r)
		li, mi := r.Header.Get("X-Tenure-Lock-Index"), r.Header.Get("X-Tenure-Modify-Index")
		if !names {
			t.Check(li == "" && mi == "", "%s named lock index %q, modify index %q", what, li, mi)
			return
		}
		p := t.MustGet(k)
		t.Check(li == strconv.FormatUint(p.LockIndex, 10) && mi == strconv.FormatUint(p.ModifyIndex, 10),
			"%s named lock index %q, modify index %q; the key reads LockIndex %d, ModifyIndex %d",
			what, li, mi, p.LockIndex, p.ModifyIndex)
	}
	step("acquire of an absent key", "v", "acquire="+a, "true", true)
	step("acquire of the held key by another session", "w", "acquire="+b, "false", false)
	step("re-acquire by the holder with a new value", "v2", "acquire="+a, "true", true)
	step("release", "", "release="+a, "true", false)
	step("plain set", "s", "", "true", false)
	step("acquire by the next holder", "w", "acquire="+b, "true", true)
}

func s26AcquireAbsent(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(nil)
	t.Require(t.PutBool(k, "v", "acquire="+a+"&flags=9"), "acquire of an absent key answered false")
	p := t.MustGet(k)
	// 1 on Consul and on a tenure server that has reaped no locked key; after
	// such a reap tenure starts above its lock floor (S52), which a suite
	// run against a long-lived server cannot know.
	t.Check(p.LockIndex >= 1, "want LockIndex >= 1 for a new lock, got %d", p.LockIndex)
	t.Equal("Session", p.Session, a)
	t.Equal("Value", string(p.Value), "v")
	t.Equal("Flags", p.Flags, uint64(9))
	t.Check(p.CreateIndex == p.ModifyIndex && p.CreateIndex > 0,
		"want CreateIndex = ModifyIndex > 0, got %d, %d", p.CreateIndex, p.ModifyIndex)
}

func s27AcquireUnlocked(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Set(k, "plain")
	prev := t.MustGet(k)
	for i, sid := range []string{a, b, a} {
		t.Require(t.Acquire(k, sid, fmt.Sprint("v", i)), "acquire %d of the unlocked key answered false", i)
		p := t.MustGet(k)
		// Consul adds 1; tenure takes max(LockIndex, watermark, lock floor) + 1,
		// and a reap between two acquires can raise the floor (S52).
		t.Check(p.LockIndex > prev.LockIndex, "acquire %d: LockIndex %d not above %d", i, p.LockIndex, prev.LockIndex)
		t.Equal(fmt.Sprintf("acquire %d: Session", i), p.Session, sid)
		t.Equal(fmt.Sprintf("acquire %d: CreateIndex", i), p.CreateIndex, prev.CreateIndex)
		t.Check(p.ModifyIndex > prev.ModifyIndex, "acquire %d: ModifyIndex %d not above %d", i, p.ModifyIndex, prev.ModifyIndex)
		t.Require(t.Release(k, sid, ""), "release %d by the holder answered false", i)
		prev = t.MustGet(k)
	}
}

func s28Reacquire(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(nil)
	t.Require(t.PutBool(k, "first", "acquire="+a+"&flags=1"), "acquire failed")
	before := t.MustGet(k)
	t.Require(t.PutBool(k, "second", "acquire="+a+"&flags=3"), "re-acquire by the holder answered false")
	p := t.MustGet(k)
	t.Equal("LockIndex after re-acquire", p.LockIndex, before.LockIndex)
	t.Equal("Session after re-acquire", p.Session, a)
	t.Equal("Value after re-acquire", string(p.Value), "second")
	t.Equal("Flags after re-acquire", p.Flags, uint64(3))
	t.Equal("CreateIndex after re-acquire", p.CreateIndex, before.CreateIndex)
	t.Check(p.ModifyIndex > before.ModifyIndex, "re-acquire changed the value but ModifyIndex stayed %d", p.ModifyIndex)
}

func s29HeldByOther(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Require(t.PutBool(k, "mine", "acquire="+a+"&flags=4"), "acquire failed")
	before := t.MustGet(k)
	t.Check(!t.PutBool(k, "theirs", "acquire="+b+"&flags=5"), "acquire of a key held by another session answered true")
	t.Unchanged("refused acquire", k, before)
}

func s30NoSession(t *caseT) {
	absent, existing := t.Key("absent"), t.Key("existing")
	t.Set(existing, "v")
	before := t.MustGet(existing)
	gone := t.CreateUnboundSession(nil)
	t.Destroy(gone)
	for _, sid := range []string{"", fakeID(), gone} {
		for _, k := range []string{absent, existing} {
			r := t.PutRaw(k, "new", "acquire="+sid)
			t.Check(r.Code >= 400, "acquire with session %q: want an error status, got %s", sid, r)
		}
		p, _ := t.Get(absent)
		t.Check(p == nil, "acquire with session %q created the absent key", sid)
		t.Unchanged(fmt.Sprintf("acquire with session %q", sid), existing, before)
	}
}

func s31ReleaseHolder(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(nil)
	t.Require(t.PutBool(k, "held", "acquire="+a+"&flags=1"), "acquire failed")
	before := t.MustGet(k)
	t.Require(t.PutBool(k, "released", "release="+a+"&flags=2"), "release by the holder answered false")
	p := t.MustGet(k)
	t.Equal("Session after release", p.Session, "")
	t.Equal("LockIndex after release", p.LockIndex, before.LockIndex)
	t.Equal("CreateIndex after release", p.CreateIndex, before.CreateIndex)
	t.Equal("Value after release", string(p.Value), "released")
	t.Equal("Flags after release", p.Flags, uint64(2))
	t.Check(p.ModifyIndex > before.ModifyIndex, "release: ModifyIndex %d not above %d", p.ModifyIndex, before.ModifyIndex)
	t.Check(t.Alive(a), "release ended the session")
}

func s31ReleaseNonHolder(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "held"), "acquire failed")
	before := t.MustGet(k)
	for _, sid := range []string{b, fakeID()} {
		t.Check(!t.Release(k, sid, "stolen"), "release naming non-holder %s answered true", sid)
		t.Unchanged("release by non-holder "+sid, k, before)
	}
}

func s31ReleaseUnlocked(t *caseT) {
	k, absent := t.Key("k"), t.Key("absent")
	a := t.CreateUnboundSession(nil)
	t.Set(k, "free")
	before := t.MustGet(k)
	t.Check(!t.Release(k, a, "x"), "release of an unlocked key answered true")
	t.Unchanged("release of unlocked key", k, before)
	t.Check(!t.Release(absent, a, "x"), "release of an absent key answered true")
	p, _ := t.Get(absent)
	t.Check(p == nil, "release of an absent key created it")
}

func s32Advisory(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "held"), "acquire failed")
	t.Set(k, "overwritten")
	p := t.MustGet(k)
	t.Equal("Session after plain set on a locked key", p.Session, a)
	t.Equal("Value after plain set", string(p.Value), "overwritten")
	t.Check(t.CAS(k, "cas", p.ModifyIndex), "cas on a locked key with the current index answered false")
	p = t.MustGet(k)
	t.Equal("Session after cas on a locked key", p.Session, a)
	t.Equal("Value after cas", string(p.Value), "cas")
}

func s33KeepLockIndex(t *caseT) {
	k := t.Key("k")
	a, b := t.CreateUnboundSession(nil), t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	li := t.MustGet(k).LockIndex
	t.Set(k, "set")
	t.Equal("LockIndex after set", t.MustGet(k).LockIndex, li)
	t.Require(t.CAS(k, "cas", t.MustGet(k).ModifyIndex), "cas failed")
	t.Equal("LockIndex after cas", t.MustGet(k).LockIndex, li)
	t.Require(t.Release(k, a, ""), "release failed")
	t.Set(k, "set while unlocked")
	t.Equal("LockIndex after set on the unlocked key", t.MustGet(k).LockIndex, li)
	t.Require(t.Acquire(k, b, ""), "acquire by b failed")
	t.Equal("LockIndex after the next acquire", t.MustGet(k).LockIndex, li+1)
}

func s34ResetLockIndex(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	t.Require(t.MustGet(k).LockIndex >= 1, "LockIndex of a held key is 0")
	t.Set(k, "set")
	p := t.MustGet(k)
	t.Equal("LockIndex after plain set", p.LockIndex, uint64(0))
	t.Equal("Session after plain set", p.Session, a)
	t.Require(t.Acquire(k, a, "again"), "re-acquire failed")
	li := t.MustGet(k).LockIndex
	t.Require(t.CAS(k, "cas", t.MustGet(k).ModifyIndex), "cas failed")
	p = t.MustGet(k)
	t.Equal(fmt.Sprintf("LockIndex after cas (was %d)", li), p.LockIndex, uint64(0))
	t.Equal("Session after cas", p.Session, a)
}

func s35CAS(t *caseT) {
	k, absent := t.Key("k"), t.Key("absent")
	t.Check(!t.CAS(absent, "x", 12345), "cas with a non-zero index on an absent key answered true")
	p, _ := t.Get(absent)
	t.Check(p == nil, "cas with a non-zero index created the key")
	t.Require(t.CAS(k, "created", 0), "cas=0 on an absent key answered false")
	before := t.MustGet(k)
	t.Equal("Value after cas=0", string(before.Value), "created")
	t.Check(!t.CAS(k, "again", 0), "cas=0 on an existing key answered true")
	t.Unchanged("cas=0 on an existing key", k, before)
	for _, idx := range []uint64{before.ModifyIndex - 1, before.ModifyIndex + 1, before.ModifyIndex + 1000} {
		t.Check(!t.CAS(k, "stale", idx), "cas=%d with ModifyIndex %d answered true", idx, before.ModifyIndex)
		t.Unchanged(fmt.Sprintf("cas=%d", idx), k, before)
	}
	t.Check(t.CAS(k, "updated", before.ModifyIndex), "cas with the current ModifyIndex answered false")
	t.Equal("Value after cas", string(t.MustGet(k).Value), "updated")
}

func s36DeleteLocked(t *caseT) {
	k := t.Key("k")
	a := t.CreateUnboundSession(map[string]any{"LockDelay": "10s"})
	b := t.CreateUnboundSession(nil)
	t.Require(t.Acquire(k, a, "v"), "acquire failed")
	t.Check(t.Delete(k, ""), "delete of a locked key answered false")
	p, _ := t.Get(k)
	t.Check(p == nil, "locked key survived delete")
	t.Check(t.Alive(a), "delete of its key ended the holder's session")
	t.Check(t.Acquire(k, b, ""), "acquire right after delete refused (delete armed lock-delay)")
}

func s36DeleteCAS(t *caseT) {
	k := t.Key("k")
	t.Set(k, "v")
	before := t.MustGet(k)
	for _, idx := range []uint64{0, before.ModifyIndex + 1, before.ModifyIndex - 1} {
		t.Check(!t.Delete(k, "cas="+u64(idx)), "delete cas=%d with ModifyIndex %d answered true", idx, before.ModifyIndex)
		t.Unchanged(fmt.Sprintf("delete cas=%d", idx), k, before)
	}
	t.Check(t.Delete(k, "cas="+u64(before.ModifyIndex)), "delete cas with the current index answered false")
	p, _ := t.Get(k)
	t.Check(p == nil, "key survived delete-cas")
	t.Check(t.Delete(k, "cas="+u64(before.ModifyIndex)), "delete-cas of an absent key answered false")
	t.Check(t.Delete(k, "cas=0"), "delete cas=0 of an absent key answered false")
}

func s36DeleteRecurse(t *caseT) {
	a := t.CreateUnboundSession(nil)
	locked, plain, deep, sibling := t.Key("p/locked"), t.Key("p/plain"), t.Key("p/q/deep"), t.Key("pz")
	t.Require(t.Acquire(locked, a, "v"), "acquire failed")
	t.Set(plain, "v")
	t.Set(deep, "v")
	t.Set(sibling, "v")
	t.Check(t.Delete(t.Key("p/"), "recurse"), "recursive delete answered false")
	for _, k := range []string{locked, plain, deep} {
		p, _ := t.Get(k)
		t.Check(p == nil, "%s survived the recursive delete of its prefix", k)
	}
	p, _ := t.Get(sibling)
	t.Check(p != nil, "%s outside the prefix was deleted", sibling)
	t.Check(t.Alive(a), "recursive delete ended the holder's session")
}

// modWatch tracks the highest index seen so far.
type modWatch struct {
	t    *caseT
	high uint64
}

// next checks that index is above every index seen before and records it.
func (m *modWatch) next(what string, index uint64) {
	m.t.Check(index > m.high, "%s: index %d not above earlier writes (%d)", what, index, m.high)
	m.high = max(m.high, index)
}

func (m *modWatch) entry(what string, p *api.KVPair) {
	if !m.t.Check(p != nil, "%s: key absent", what) {
		return
	}
	m.t.Check(p.CreateIndex <= p.ModifyIndex, "%s: CreateIndex %d > ModifyIndex %d", what, p.CreateIndex, p.ModifyIndex)
	m.next(what, p.ModifyIndex)
}

func s37ModifyIndex(t *caseT) {
	a, b := t.Key("a"), t.Key("b")
	s := t.CreateUnboundSession(nil)
	w := &modWatch{t: t}
	t.Set(a, "1")
	w.entry("set a", t.MustGet(a))
	t.Set(b, "1")
	w.entry("set b", t.MustGet(b))
	t.Require(t.Acquire(a, s, "2"), "acquire failed")
	w.entry("acquire a", t.MustGet(a))
	t.Require(t.Release(a, s, "3"), "release failed")
	w.entry("release a", t.MustGet(a))
	t.Require(t.CAS(b, "2", t.MustGet(b).ModifyIndex), "cas failed")
	w.entry("cas b", t.MustGet(b))
	t.Require(t.Delete(a, ""), "delete failed")
	_, r := t.List(a) // a tombstone's index is the list index of exactly that key
	w.next("delete a (list index)", r.Index())
	t.Set(a, "4")
	w.entry("re-create a", t.MustGet(a))

	// Writes that change nothing leave ModifyIndex alone.
	same := t.MustGet(a)
	t.Set(a, "4")
	t.Equal("ModifyIndex after an identical set", t.MustGet(a).ModifyIndex, same.ModifyIndex)
	t.Check(!t.CAS(a, "5", same.ModifyIndex+7), "stale cas answered true")
	t.Equal("ModifyIndex after a failed cas", t.MustGet(a).ModifyIndex, same.ModifyIndex)
	t.Require(t.Acquire(a, s, "held"), "acquire failed")
	held := t.MustGet(a)
	t.Require(t.Acquire(a, s, "held"), "identical re-acquire failed")
	t.Equal("ModifyIndex after an identical re-acquire", t.MustGet(a).ModifyIndex, held.ModifyIndex)
	t.Check(!t.Release(a, fakeID(), "x"), "release by a non-holder answered true")
	t.Equal("ModifyIndex after a refused release", t.MustGet(a).ModifyIndex, held.ModifyIndex)
}

func s38ValueFlags(t *caseT) {
	k := t.Key("k")
	s := t.CreateUnboundSession(nil)
	step := func(what, value, query string, wantValue string, wantFlags uint64) {
		t.Require(t.PutBool(k, value, query), "%s answered false", what)
		p := t.MustGet(k)
		t.Equal(what+": Value", string(p.Value), wantValue)
		t.Equal(what+": Flags", p.Flags, wantFlags)
	}
	step("set with flags", "a", "flags=5", "a", 5)
	step("set without flags", "b", "", "b", 0)
	step("acquire with flags and no body", "", "acquire="+s+"&flags=7", "", 7)
	step("re-acquire without flags", "c", "acquire="+s, "c", 0)
	step("release with flags", "d", "release="+s+"&flags=11", "d", 11)
	step("acquire again", "e", "acquire="+s+"&flags=2", "e", 2)
	step("release with no body or flags", "", "release="+s, "", 0)
	step("cas", "f", "cas="+u64(t.MustGet(k).ModifyIndex), "f", 0)
}

func s39BadInput(t *caseT) {
	k, absent := t.Key("k"), t.Key("absent")
	s := t.CreateUnboundSession(nil)
	t.Set(k, "v")
	before := t.MustGet(k)
	check := func(what string, r *resp, code int) {
		t.Check(r.Code == code, "%s: want %d, got %s", what, code, r)
		t.Unchanged(what, k, before)
		p, _ := t.Get(absent)
		t.Check(p == nil, "%s: created %s", what, absent)
	}
	for _, key := range []string{k, absent} {
		for _, q := range []string{
			"cas=0&acquire=" + s, "acquire=" + s + "&release=" + s, "cas=" + u64(before.ModifyIndex) + "&release=" + s,
			"flags=abc", "flags=-1", "cas=abc", "cas=-1", "flags=18446744073709551616",
		} {
			check("PUT "+key+"?"+q, t.PutRaw(key, "bad", q), 400)
		}
		check("DELETE "+key+"?cas=abc", t.Do(http.MethodDelete, "/v1/kv/"+key+"?cas=abc", nil), 400)
	}
	check("PUT with an empty key", t.Do(http.MethodPut, "/v1/kv/", []byte("x")), 400)
	const maxValue = 512 * 1024
	check("PUT of 512 KiB + 1", t.PutRaw(k, strings.Repeat("x", maxValue+1), ""), 413)
	check("PUT of 512 KiB + 1 to an absent key", t.PutRaw(absent, strings.Repeat("x", maxValue+1), ""), 413)
	// The limit itself is fine.
	t.Set(absent, strings.Repeat("y", maxValue))
	t.Equal("length of a 512 KiB value", len(t.MustGet(absent).Value), maxValue)
}

// s39RequestLimits: keys, session names and txn keys over tenure's limits
// answer 413 with a one-line reason and store nothing; at the limit they
// are served.
func s39RequestLimits(t *caseT) {
	const maxKey, maxName = 8 << 10, 1 << 10
	pad := func(prefix string, n int) string { return prefix + strings.Repeat("k", n-len(prefix)) }
	limited := func(what string, r *resp) {
		txt := r.Text()
		t.Check(r.Code == 413 && strings.Contains(txt, "too long") && !strings.Contains(txt, "\n"),
			"%s: want 413 with a one-line \"too long\" reason, got %s", what, r)
	}
	over, at := pad(t.Key("over-"), maxKey+1), pad(t.Key("at-"), maxKey)
	limited("PUT of a key one byte over the limit", t.PutRaw(over, "v", ""))
	limited("txn set of a key one byte over the limit", t.DoJSON(http.MethodPut, "/v1/txn",
		[]map[string]any{{"KV": map[string]any{"Verb": "set", "Key": over, "Value": []byte("v")}}}))
	keys, _ := t.List(t.Prefix())
	t.Check(len(keys) == 0, "rejected writes stored %d keys", len(keys))
	t.Set(at, "v")
	t.Equal("key at the limit", t.MustGet(at).Key, at)

	node := t.RegisterNode("limits")
	limited("session create with a name one byte over the limit", t.DoJSON(http.MethodPut, "/v1/session/create",
		map[string]any{"Node": node, "Checks": []string{}, "Name": strings.Repeat("n", maxName+1)}))
	t.Check(len(t.NodeSessions(node)) == 0, "rejected create left a session on %s", node)
	sid := t.CreateSessionOn(node, []string{}, map[string]any{"Name": strings.Repeat("n", maxName)})
	t.Equal("session name at the limit", len(t.SessionInfo(sid).Name), maxName)
}
