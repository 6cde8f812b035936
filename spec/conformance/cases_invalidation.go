package conformance

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
)

// Session invalidation: S10-S17 and S48.

func invalidationCases() []Case {
	return []Case{
		{clause: "S10", name: "node-deregistration-invalidates-node-sessions", run: s10NodeDereg},
		{clause: "S11", name: "check-deregistration-invalidates-bound-sessions", run: s11CheckDereg},
		{clause: "S12", name: "critical-invalidates-warning-passing-do-not", run: s12Critical},
		{clause: "S13", name: "destroy-invalidates", run: s13Destroy},
		{clause: "S13", name: "destroy-unknown-changes-nothing", run: s13DestroyUnknown},
		{clause: "S15", name: "critical-release-one-index-no-partial-read", run: s15Critical},
		{clause: "S15", name: "destroy-release-delete-no-partial-read", run: s15Destroy},
		{clause: "S16", name: "release-keeps-contents-clears-session", run: s16Release},
		{clause: "S17", name: "delete-deletes-held-keys-at-one-index", run: s17Delete},
		{clause: "S48", name: "catalog-status-update-invalidates-at-its-index", run: s48StatusUpdate},
	}
}

// holding creates a session from fields on node bound to checks and has it
// acquire each key; it returns the session ID.
func (t *caseT) holding(node string, checks []string, fields map[string]any, keys ...string) string {
	id := t.CreateSessionOn(node, checks, fields)
	for _, k := range keys {
		t.Require(t.Acquire(k, id, "v-"+k), "session %s could not acquire fresh key %s", id, k)
	}
	return id
}

// heldBy checks whether key exists and is held by sid.
func (t *caseT) heldBy(key, sid string) bool {
	p, _ := t.Get(key)
	return p != nil && p.Session == sid
}

// expectReleased checks key exists, unlocked, with LockIndex kept.
func (t *caseT) expectReleased(what, key string, before *api.KVPair) {
	p, _ := t.Get(key)
	if !t.Check(p != nil, "%s: key %s was deleted, want it released", what, key) {
		return
	}
	t.Check(p.Session == "", "%s: key %s still held by %s", what, key, p.Session)
	if before != nil {
		t.Equal(what+": LockIndex of "+key, p.LockIndex, before.LockIndex)
	}
}

func s10NodeDereg(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"c1", "passing"})
	m := t.RegisterNode("m")
	k1, k2, k3 := t.Key("k1"), t.Key("k2"), t.Key("k3")
	a := t.holding(n, []string{"c1"}, nil, k1)
	b := t.holding(n, nil, nil, k2)
	c := t.holding(m, nil, nil, k3)
	b1, b2 := t.MustGet(k1), t.MustGet(k2)
	t.DeregisterNode(n)
	t.Check(!t.Alive(a), "session bound to a check of the deregistered node survived")
	t.Check(!t.Alive(b), "session on the deregistered node (no checks) survived")
	t.Check(t.Alive(c), "session on another node was invalidated")
	t.expectReleased("node deregistered", k1, b1)
	t.expectReleased("node deregistered", k2, b2)
	t.Check(t.heldBy(k3, c), "key of the other node's session was released")
}

func s11CheckDereg(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"c1", "passing"}, checkSpec{"c2", "passing"})
	k1, k2, k3, k4 := t.Key("k1"), t.Key("k2"), t.Key("k3"), t.Key("k4")
	a := t.holding(n, []string{"c1"}, nil, k1)
	b := t.holding(n, []string{"c2"}, nil, k2)
	c := t.holding(n, nil, nil, k3)
	d := t.holding(n, []string{"c1", "c2"}, nil, k4)
	t.DeregisterCheck(n, "c1")
	t.Check(!t.Alive(a), "session bound to the deregistered check survived")
	t.Check(!t.Alive(d), "session bound to the deregistered check and another survived")
	t.Check(t.Alive(b), "session bound only to another check was invalidated")
	t.Check(t.Alive(c), "session bound to no checks was invalidated")
	t.Check(!t.heldBy(k1, a) && !t.heldBy(k4, d), "keys of invalidated sessions still held")
	t.Check(t.heldBy(k2, b) && t.heldBy(k3, c), "keys of live sessions were released")
}

func s12Critical(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"c1", "passing"}, checkSpec{"c2", "passing"})
	k1, k2, k3 := t.Key("k1"), t.Key("k2"), t.Key("k3")
	a := t.holding(n, []string{"c1"}, nil, k1)
	b := t.holding(n, []string{"c2"}, nil, k2)
	c := t.holding(n, []string{"c1", "c2"}, nil, k3)
	for _, st := range []string{"warning", "passing", "warning"} {
		t.SetCheck(n, "c1", st)
		for _, id := range []string{a, b, c} {
			t.Check(t.Alive(id), "check c1 set to %s invalidated session %s", st, id)
		}
		t.Check(t.heldBy(k1, a) && t.heldBy(k3, c), "check c1 set to %s released keys", st)
	}
	t.SetCheck(n, "c1", "critical")
	t.Check(!t.Alive(a), "session bound to the critical check survived")
	t.Check(!t.Alive(c), "session bound to the critical check and another survived")
	t.Check(t.Alive(b), "session bound only to a passing check was invalidated")
	t.Check(!t.heldBy(k1, a) && !t.heldBy(k3, c), "keys of invalidated sessions still held")
	t.Check(t.heldBy(k2, b), "key of the live session was released")
}

func s13Destroy(t *caseT) {
	k := t.Key("k")
	a := t.holding(t.HomeNode(), nil, nil, k)
	before := t.MustGet(k)
	t.Destroy(a)
	t.Check(!t.Alive(a), "destroyed session still exists")
	t.expectReleased("destroy", k, before)
	t.Destroy(a) // destroying again is destroying an unknown ID: still true
}

func s13DestroyUnknown(t *caseT) {
	k := t.Key("k")
	home := t.HomeNode()
	a := t.holding(home, nil, nil, k)
	before := t.MustGet(k)
	sessBefore := t.NodeSessions(home)
	for i := 0; i < 3; i++ {
		t.Destroy(fakeID())
	}
	t.Check(t.Alive(a), "destroying unknown IDs invalidated an unrelated session")
	t.Unchanged("destroy of unknown IDs", k, before)
	t.Equal("sessions of the node after destroying unknown IDs", len(t.NodeSessions(home)), len(sessBefore))
}

// probeAtomic reads, until stop, in orders that expose a partial
// invalidation of session sid holding keys: once the session is seen gone
// its keys must already be released; once a key is seen released the
// session must already be gone. It returns how many rounds it made.
func (t *caseT) probeAtomic(sid string, keys []string, stop *atomic.Bool) (rounds int) {
	for !stop.Load() {
		rounds++
		if !t.Alive(sid) {
			for _, k := range keys {
				if t.heldBy(k, sid) {
					t.Errorf("partial invalidation observed: session %s gone but %s still held by it", sid, k)
					return rounds
				}
			}
		}
		for _, k := range keys {
			p, _ := t.Get(k)
			if p != nil && p.Session == "" && t.Alive(sid) {
				t.Errorf("partial invalidation observed: %s released while session %s still exists", k, sid)
				return rounds
			}
		}
	}
	return rounds
}

func s15Critical(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"c", "passing"})
	k1, k2 := t.Key("k1"), t.Key("k2")
	a := t.holding(n, []string{"c"}, nil, k1, k2)
	var stop atomic.Bool
	wait := t.Go(func() { t.probeAtomic(a, []string{k1, k2}, &stop) })
	t.Sleep(100 * time.Millisecond)
	t.SetCheck(n, "c", "critical")
	t.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wait()
	p1, p2 := t.MustGet(k1), t.MustGet(k2)
	chk := t.NodeChecks(n)["c"]
	t.Require(chk != nil, "check c vanished")
	t.Check(p1.ModifyIndex == p2.ModifyIndex && p1.ModifyIndex == chk.ModifyIndex,
		"trigger and releases must share one index: check ModifyIndex %d, key ModifyIndexes %d, %d",
		chk.ModifyIndex, p1.ModifyIndex, p2.ModifyIndex)
}

func s15Destroy(t *caseT) {
	for _, behavior := range []string{"release", "delete"} {
		k1, k2 := t.Key(behavior+"/k1"), t.Key(behavior+"/k2")
		a := t.holding(t.HomeNode(), nil, map[string]any{"Behavior": behavior}, k1, k2)
		var stop atomic.Bool
		wait := t.Go(func() {
			if behavior == "release" {
				t.probeAtomic(a, []string{k1, k2}, &stop)
				return
			}
			// delete: once the session is gone its keys must be gone, and a
			// key seen gone means the session is gone.
			for !stop.Load() {
				if !t.Alive(a) {
					p1, _ := t.Get(k1)
					p2, _ := t.Get(k2)
					if p1 != nil || p2 != nil {
						t.Errorf("partial invalidation: session gone, keys %v/%v still present", p1 != nil, p2 != nil)
						return
					}
				}
				if p, _ := t.Get(k1); p == nil && t.Alive(a) {
					t.Errorf("partial invalidation: %s deleted while session still exists", k1)
					return
				}
			}
		})
		t.Sleep(100 * time.Millisecond)
		t.Destroy(a)
		t.Sleep(100 * time.Millisecond)
		stop.Store(true)
		wait()
	}
}

func s16Release(t *caseT) {
	k1, k2, k3 := t.Key("k1"), t.Key("k2"), t.Key("k3")
	t.Set(k3, "pre-existing")
	a := t.CreateUnboundSession(nil)
	t.Require(t.PutBool(k1, "one", "acquire="+a+"&flags=42"), "acquire k1 failed")
	t.Require(t.Acquire(k2, a, ""), "acquire k2 failed")
	t.Require(t.PutBool(k3, "three", "acquire="+a+"&flags=7"), "acquire k3 failed")
	before := map[string]*api.KVPair{}
	var maxMod uint64
	for _, k := range []string{k1, k2, k3} {
		before[k] = t.MustGet(k)
		maxMod = max(maxMod, before[k].ModifyIndex)
	}
	t.Destroy(a)
	var mod uint64
	for i, k := range []string{k1, k2, k3} {
		p := t.MustGet(k)
		b := before[k]
		t.Equal("Session of "+k, p.Session, "")
		t.Equal("Value of "+k, string(p.Value), string(b.Value))
		t.Equal("Flags of "+k, p.Flags, b.Flags)
		t.Equal("LockIndex of "+k, p.LockIndex, b.LockIndex)
		t.Equal("CreateIndex of "+k, p.CreateIndex, b.CreateIndex)
		t.Check(p.ModifyIndex > maxMod, "%s: ModifyIndex %d not above earlier writes (%d)", k, p.ModifyIndex, maxMod)
		if i == 0 {
			mod = p.ModifyIndex
		}
		t.Check(p.ModifyIndex == mod, "released keys have different ModifyIndexes (%d vs %d): not one invalidation index", p.ModifyIndex, mod)
	}
}

func s17Delete(t *caseT) {
	ka, kb, other := t.Key("held/a"), t.Key("held/b"), t.Key("held/other")
	t.Set(other, "not held")
	d := t.CreateUnboundSession(map[string]any{"Behavior": "delete"})
	t.Require(t.Acquire(ka, d, "a"), "acquire a failed")
	t.Require(t.Acquire(kb, d, "b"), "acquire b failed")
	maxMod := max(t.MustGet(ka).ModifyIndex, t.MustGet(kb).ModifyIndex)
	t.Destroy(d)
	for _, k := range []string{ka, kb} {
		p, _ := t.Get(k)
		t.Check(p == nil, "%s still exists after its delete-behavior session was invalidated (Session %q)", k, sessionOf(p))
	}
	t.Check(t.MustGet(other).Session == "", "unheld key changed")
	// Each deleted key leaves a tombstone at the invalidation index, which a
	// list of exactly that key reports as its index (S45).
	_, ra := t.List(ka)
	_, rb := t.List(kb)
	t.Check(ra.Code == 404 && rb.Code == 404, "lists of deleted keys: %s, %s", ra, rb)
	t.Check(ra.Index() == rb.Index() && ra.Index() > maxMod,
		"deletions must share one index above %d: got %d and %d", maxMod, ra.Index(), rb.Index())
}

func sessionOf(p *api.KVPair) string {
	if p == nil {
		return ""
	}
	return p.Session
}

func s48StatusUpdate(t *caseT) {
	n := t.RegisterNode("n", checkSpec{"c", "passing"})
	k := t.Key("k")
	a := t.holding(n, []string{"c"}, nil, k)
	for _, st := range []string{"warning", "passing"} {
		t.SetCheck(n, "c", st)
		t.Equal(fmt.Sprintf("check status after update to %s", st), t.NodeChecks(n)["c"].Status, st)
		t.Check(t.heldBy(k, a), "status update to %s released the key", st)
	}
	t.SetCheck(n, "c", "critical")
	chk := t.NodeChecks(n)["c"]
	t.Require(chk != nil && chk.Status == "critical", "check c not critical after update: %+v", chk)
	t.Check(!t.Alive(a), "session survived its check turning critical")
	p := t.MustGet(k)
	t.Equal("Session after critical", p.Session, "")
	t.Equal("release index vs check update index", p.ModifyIndex, chk.ModifyIndex)
}
