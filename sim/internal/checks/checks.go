package checks

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// Violation is one property failure found in a trace.
type Violation struct {
	Check   string        `json:"check"`
	Clauses []string      `json:"clauses"`
	At      time.Duration `json:"at"`
	Msg     string        `json:"msg"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s) at %v: %s", v.Check, strings.Join(v.Clauses, ","), v.At, v.Msg)
}

func violation(at time.Duration, format string, args ...any) Violation {
	return Violation{At: at, Msg: fmt.Sprintf(format, args...)}
}

// checkFenced: the fenced resource never accepts a stale sequencer.
//   - Token rule: per key, accepted LockIndexes never go down, and one
//     LockIndex is accepted from one session only.
//   - Txn rule: a write admitted by check-sequencer had a sequencer that was
//     the key's holder at some instant after the check was sent: its holding
//     (by the servers' applied states) had not ended before CheckCall, and
//     had begun by the time the write was accepted.
func checkFenced(ix *traceIndex) []Violation {
	var out []Violation
	maxLI := map[string]uint64{}
	owner := map[string]map[uint64]string{}
	var holdings map[model.Sequencer]*holding
	if len(ix.Obs) > 0 {
		holdings = ix.Holdings()
	}
	for _, e := range ix.writes {
		w := e.Write
		if w.Resource != core.ResFenced || !w.Accepted {
			continue
		}
		ix.judge(1)
		k, li := w.Seq.Key, w.Seq.LockIndex
		if li < maxLI[k] {
			out = append(out, violation(e.At, "%s accepted %s's write with lock index %d after accepting %d on %q", core.ResFenced, w.Client, li, maxLI[k], k))
		}
		if s, ok := owner[k][li]; ok && s != w.Seq.Session {
			out = append(out, violation(e.At, "%s accepted lock index %d on %q from two sessions: %s and %s", core.ResFenced, li, k, s, w.Seq.Session))
		}
		maxLI[k] = max(maxLI[k], li)
		if owner[k] == nil {
			owner[k] = map[uint64]string{}
		}
		owner[k][li] = w.Seq.Session
		if w.Mode != core.FenceTxn || holdings == nil {
			continue
		}
		t := holdings[w.Seq]
		switch {
		case t == nil:
			out = append(out, violation(e.At, "%s accepted sequencer %+v that no server ever applied", core.ResFenced, w.Seq))
		case t.End >= 0 && t.End < w.CheckCall:
			out = append(out, violation(e.At, "%s accepted sequencer %+v whose holding ended at %v, before its check was sent at %v", core.ResFenced, w.Seq, t.End, w.CheckCall))
		case t.Start > e.At:
			out = append(out, violation(e.At, "%s accepted sequencer %+v before its holding began at %v", core.ResFenced, w.Seq, t.Start))
		}
	}
	return out
}

// checkSequencerUnique: a (key, LockIndex) names one session (S41), and a
// key's LockIndex never goes down while it exists (S33). Sources: every
// server's applied changes, plus what clients saw (txn lock results, reads).
func checkSequencerUnique(ix *traceIndex) []Violation {
	var out []Violation
	type kl struct {
		key string
		li  uint64
	}
	issued := map[kl]string{}
	see := func(at time.Duration, who string, e model.KVEntry) {
		if e.Session == "" || e.LockIndex == 0 {
			return
		}
		k := kl{e.Key, e.LockIndex}
		if s, ok := issued[k]; ok && s != e.Session {
			out = append(out, violation(at, "lock index %d on %q issued to two sessions: %s, then %s (seen by %s)", e.LockIndex, e.Key, s, e.Session, who))
			return
		}
		issued[k] = e.Session
	}
	// Per server incarnation: issued LockIndexes only grow per key.
	top := map[serverInc]map[string]uint64{}
	for _, o := range ix.Obs {
		id := o.inc()
		if top[id] == nil {
			top[id] = map[string]uint64{}
		}
		for _, kc := range o.Obs.Keys {
			if kc.After == nil {
				continue
			}
			a := *kc.After
			if kc.Before != nil && a.LockIndex < kc.Before.LockIndex {
				out = append(out, violation(o.At, "%s: lock index of %q went down from %d to %d", o.Server, a.Key, kc.Before.LockIndex, a.LockIndex))
			}
			newHolder := a.Session != "" && (kc.Before == nil || kc.Before.Session != a.Session)
			if newHolder && a.LockIndex <= top[id][a.Key] {
				out = append(out, violation(o.At, "%s: session %s acquired %q with lock index %d, not above %d issued before", o.Server, a.Session, a.Key, a.LockIndex, top[id][a.Key]))
			}
			top[id][a.Key] = max(top[id][a.Key], a.LockIndex)
			see(o.At, o.Server, a)
		}
	}
	for _, op := range ix.ops {
		if !op.OK() {
			continue
		}
		for _, e := range op.Ret.Entries {
			see(op.RetAt, op.Client, e)
		}
	}
	ix.judge(len(issued))
	return out
}

// checkTTLLowerBound: no TTL invalidation earlier than TTL after the last
// create, renew or leader change, on the invalidating leader's clock (S18,
// S21): its rate and any wall-clock step it took. Only resets the leader certainly saw count: a renew counts if the
// leader was the only one from its call to its return. Sessions a client
// destroyed are skipped (that is not a TTL invalidation); so are sessions
// bound to checks.
func checkTTLLowerBound(ix *traceIndex) []Violation {
	var out []Violation
	created := map[string]*Op{}
	renews := map[string][]*Op{}
	destroyed := map[string]time.Duration{}
	for _, op := range ix.ops {
		switch op.Call.Req {
		case core.ReqCreate:
			if op.OK() && op.Ret.SessionID != "" {
				created[op.Ret.SessionID] = op
			}
		case core.ReqRenew:
			if op.OK() {
				renews[op.Call.ID] = append(renews[op.Call.ID], op)
			}
		case core.ReqDestroy:
			if op.notApplied() {
				continue
			}
			if t, ok := destroyed[op.Call.ID]; !ok || op.CallAt < t {
				destroyed[op.Call.ID] = op.CallAt
			}
		}
	}
	seen := map[string]bool{}
	for _, o := range ix.Obs {
		if o.Obs.Replay || !o.Obs.Leader {
			continue
		}
		// A session without checks is invalidated by a destroy, its TTL,
		// or the deregistration of its node (S10), which owes the TTL
		// nothing: a deregister entry is the last of these.
		if o.Obs.Command == "deregister" {
			continue
		}
		for _, s := range o.Obs.GoneSess {
			ttl := s.TTLDuration()
			if ttl == 0 || len(s.CheckIDs()) > 0 || seen[s.ID] {
				continue
			}
			if t, ok := destroyed[s.ID]; ok && t <= o.At {
				continue
			}
			seen[s.ID] = true
			reset, why := time.Duration(-1), ""
			if c := created[s.ID]; c != nil {
				reset, why = c.CallAt, "create"
			}
			if st, ok := ix.leaderSince(o.Server, o.At); ok && st > reset {
				reset, why = st, "leadership of "+o.Server
			}
			for _, r := range renews[s.ID] {
				if r.CallAt > reset && r.RetAt <= o.At && ix.soleLeader(o.Server, r.CallAt, r.RetAt) {
					reset, why = r.CallAt, fmt.Sprintf("renew op %d", r.Call.Op)
				}
			}
			if reset < 0 {
				continue
			}
			ix.judge(1)
			lived := ix.serverElapsed(o.Server, reset, o.At)
			if lived < ttl {
				out = append(out, violation(o.At, "%s invalidated TTL %v session %s after %v on its clock since the last reset (%s at %v)", o.Server, ttl, s.ID, lived, why, reset))
			}
		}
	}
	return out
}

// checkLockDelay: after an invalidation arms lock-delay d on a key, no other
// session acquires it until d has passed on the accepting leader's clock
// since that leader's own apply of the invalidation (S22, S49). For each
// arming, the first acquire after it (the one issuing the next LockIndex)
// is found; for every server, the gap runs from its latest apply of the
// invalidation (a restart's replay re-arms it) to its live apply of the
// acquire, on its own clock. The leader of the acquire's own term, which
// accepted and proposed it, decides: a leader of a later term that applies
// the entry after catching up only inherited it, and its gap says nothing.
// If the proposer did not apply the acquire as leader (it stepped down
// before the commit), a violation needs every server's gap to be short.
// Lagging servers that apply both entries in one batch therefore never
// raise a false alarm.
func checkLockDelay(ix *traceIndex) []Violation {
	cross := crossings(ix)
	var out []Violation
	for _, a := range armings(ix, firstApplies(ix)) {
		j, next := uint64(0), ""
		for _, o := range ix.Obs {
			if o.Obs.Replay {
				continue
			}
			for _, kc := range o.Obs.Keys {
				n := kc.After
				if kc.Key != a.key || n == nil || n.LockIndex != a.holderLI+1 || n.Session == "" || n.Session == a.session ||
					(kc.Before != nil && kc.Before.Session == n.Session) || n.ModifyIndex <= a.index {
					continue
				}
				if j == 0 || n.ModifyIndex < j {
					j, next = n.ModifyIndex, n.Session
				}
			}
		}
		if j == 0 {
			continue
		}
		type gap struct {
			server  string
			d       time.Duration
			decides bool
		}
		var gaps []gap
		for _, cj := range cross {
			if cj.replay || j <= cj.lo || j > cj.hi {
				continue
			}
			armedAt := time.Duration(-1)
			for _, ci := range cross {
				if ci.server == cj.server && ci.at <= cj.at && a.index > ci.lo && a.index <= ci.hi {
					armedAt = ci.at
				}
			}
			if armedAt >= 0 {
				gaps = append(gaps, gap{cj.server, ix.serverElapsed(cj.server, armedAt, cj.at), cj.proposer})
			}
		}
		decide := slices.DeleteFunc(slices.Clone(gaps), func(g gap) bool { return !g.decides })
		if len(decide) == 0 {
			decide = gaps
		}
		if len(decide) > 0 {
			ix.judge(1)
		}
		if len(decide) == 0 || slices.ContainsFunc(decide, func(g gap) bool { return g.d >= a.delay }) {
			continue
		}
		var desc []string
		for _, g := range decide {
			desc = append(desc, fmt.Sprintf("%s %v", g.server, g.d))
		}
		out = append(out, violation(a.firstAt, "session %s acquired %q (index %d) after session %s's invalidation (index %d) armed lock-delay %v, too soon on the deciding servers' clocks: %s",
			next, a.key, j, a.session, a.index, a.delay, strings.Join(desc, ", ")))
	}
	return out
}

// checkBehaviour: invalidation is atomic with the release or deletion of the
// session's keys (S15), release keeps LockIndex and clears Session (S16),
// delete removes the key (S17). It reads each server's applied changes: no
// state may show a key held by a session that no longer exists, and the
// change that removes a session must carry its keys' release or deletion.
func checkBehaviour(ix *traceIndex) []Violation {
	var out []Violation
	for _, o := range ix.Obs {
		ix.judge(len(o.Obs.Orphans))
		for _, k := range o.Obs.Orphans {
			out = append(out, violation(o.At, "%s: key %q is held by a session that no longer exists", o.Server, k))
		}
		// Each observation is one entry, so every change to a key whose
		// holder the entry removed is the invalidation's own doing.
		for kc, s := range o.goneHolders() {
			ix.judge(1)
			b, a := kc.Before, kc.After
			switch s.Behavior {
			case model.BehaviorDelete:
				if a != nil {
					out = append(out, violation(o.At, "%s: delete-behaviour session %s was invalidated but its key %q still exists (S17)", o.Server, s.ID, kc.Key))
				}
			default:
				switch {
				case a == nil:
					out = append(out, violation(o.At, "%s: release-behaviour session %s was invalidated and its key %q vanished (S16)", o.Server, s.ID, kc.Key))
				case a.CreateIndex != b.CreateIndex || a.LockIndex != b.LockIndex:
					out = append(out, violation(o.At, "%s: release of %q changed its lock index %d to %d or its create index %d to %d (S16)",
						o.Server, kc.Key, b.LockIndex, a.LockIndex, b.CreateIndex, a.CreateIndex))
				}
			}
		}
	}
	return out
}

// checkDurable: no acknowledged write is lost across crashes and leader
// changes. For each key the final read saw, take the acknowledged write that
// is certainly the last one (every other write to the key returned, with an
// outcome, before it was sent, and no session holding the key was invalidated
// after it); the final read must show its value (or absence, for a delete).
// A write whose client gave up (outcome unknown) may still be applied after
// that: a request delivered late, or an entry proposed before the cancel
// arrived, commits whenever raft gets to it, so it stays concurrent with
// every later write.
func checkDurable(ix *traceIndex) []Violation {
	var out []Violation
	finals := map[string]*Op{}
	for _, op := range ix.ops {
		if op.Client == core.FinalClient && op.Call.Req == core.ReqGet && op.OK() {
			finals[op.Call.Key] = op
		}
	}
	for key, fin := range finals {
		var last *Op
		ambiguous := false
		for _, op := range ix.ops {
			if op == fin || !op.writesKey(key) || op.CallAt > fin.CallAt {
				continue
			}
			if op.notApplied() {
				continue
			}
			if last == nil || op.CallAt > last.CallAt {
				last = op
			}
		}
		if last == nil || !last.OK() || !ackedWrite(last, key) {
			continue
		}
		for _, op := range ix.ops {
			if op != last && op != fin && op.writesKey(key) && op.CallAt <= fin.CallAt &&
				!op.notApplied() && (!op.Done() || op.RetAt >= last.CallAt) {
				ambiguous = true
			}
		}
		for _, o := range ix.Obs {
			if o.At >= last.CallAt && len(o.Obs.GoneSess) > 0 {
				for _, kc := range o.Obs.Keys {
					if kc.Key == key {
						ambiguous = true
					}
				}
			}
		}
		if ambiguous {
			continue
		}
		ix.judge(1)
		want, exists := writtenValue(last, key)
		got := fin.Ret
		switch {
		case exists && !got.Found:
			out = append(out, violation(fin.RetAt, "acknowledged write op %d (%s at %v) to %q is lost: the final read finds no key", last.Call.Op, last.Client, last.CallAt, key))
		case !exists && got.Found:
			out = append(out, violation(fin.RetAt, "acknowledged delete op %d of %q is lost: the final read finds the key", last.Call.Op, key))
		case exists && got.Found && len(got.Entries) == 1 && string(got.Entries[0].Value) != want:
			out = append(out, violation(fin.RetAt, "acknowledged write op %d of %q to %q is lost: the final read shows %q", last.Call.Op, want, key, got.Entries[0].Value))
		}
	}
	return out
}

// ackedWrite reports whether op's success certainly changed key.
func ackedWrite(op *Op, key string) bool {
	if kv := op.Call.KV; kv != nil {
		switch kv.Verb {
		case model.KVSet, model.KVDelete:
			return true
		case model.KVCAS, model.KVLock, model.KVUnlock:
			return op.Ret.OK
		}
		return false
	}
	return op.Call.Txn != nil && len(op.Ret.TxnErrors) == 0
}

// writtenValue is the value op left on key, and whether the key exists after it.
func writtenValue(op *Op, key string) (string, bool) {
	if kv := op.Call.KV; kv != nil {
		return string(kv.Value), kv.Verb != model.KVDelete && kv.Verb != model.KVDeleteCAS
	}
	val, exists := "", true
	for _, t := range op.Call.Txn {
		if t.Key != key || !t.Verb.IsWrite() {
			continue
		}
		switch t.Verb {
		case model.KVDelete, model.KVDeleteCAS, model.KVDeleteTree:
			val, exists = "", false
		default:
			val, exists = string(t.Value), true
		}
	}
	return val, exists
}

// checkLiveness: once faults heal, (a) every TTL session whose owner has
// stopped is invalidated within Bounds.Invalidate, (b) every key not
// excluded is acquired by the prober within Bounds.Acquire, and (c) while a
// crashed server stays down (the rest keeping quorum), the sessions bound to
// its serfHealth are invalidated within Bounds.DeadNode.
func checkLiveness(ix *traceIndex) []Violation {
	var out []Violation
	b := ix.hdr.Bounds
	goneAt := map[string]time.Duration{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.GoneSess {
			if t, ok := goneAt[s.ID]; !ok || o.At < t {
				goneAt[s.ID] = o.At
			}
		}
	}
	if ix.liveness >= 0 && b.Acquire > 0 {
		h := ix.liveness
		// (a) TTL sessions of clients that stopped: created OK, never
		// destroyed by a definite success.
		destroyed := map[string]bool{}
		for _, op := range ix.ops {
			if op.Call.Req == core.ReqDestroy && op.OK() {
				destroyed[op.Call.ID] = true
			}
		}
		for _, op := range ix.ops {
			if op.Call.Req != core.ReqCreate || !op.OK() || op.Call.Create == nil || op.Call.Create.TTL == "" {
				continue
			}
			id := op.Ret.SessionID
			if destroyed[id] || op.Client == core.ProberClient {
				continue
			}
			if ix.end < h+b.Invalidate {
				continue // the run ended before the bound: nothing to say
			}
			ix.judge(1)
			if t, ok := goneAt[id]; ok && t <= h+b.Invalidate {
				continue
			}
			out = append(out, violation(h+b.Invalidate, "TTL session %s of %s not invalidated within %v after the last heal at %v", id, op.Client, b.Invalidate, h))
		}
		// (b) the prober acquires every key.
		acquired := map[string]time.Duration{}
		probed := map[string]bool{}
		for _, op := range ix.ops {
			if op.Client != core.ProberClient {
				continue
			}
			for _, key := range lockKeys(op.Call) {
				probed[key] = true
				if op.OK() && lockSucceeded(op) {
					if t, ok := acquired[key]; !ok || op.RetAt < t {
						acquired[key] = op.RetAt
					}
				}
			}
		}
		for _, key := range slices.Sorted(maps.Keys(probed)) {
			if ix.excluded[key] {
				continue
			}
			ix.judge(1)
			if t, ok := acquired[key]; ok && t <= h+b.Acquire {
				continue
			}
			out = append(out, violation(h+b.Acquire, "key %q not acquirable within %v after the last heal at %v", key, b.Acquire, h))
		}
	}
	// (c) sessions on a crashed server, bound to its serfHealth (client
	// agents: checkDeadHolderInvalidated).
	if b.DeadNode > 0 {
		for server, crashes := range ix.crashes {
			if slices.Contains(ix.hdr.Agents, server) {
				continue
			}
			for _, c := range crashes {
				if ix.restartAfter(server, c) < c+b.DeadNode || ix.end < c+b.DeadNode {
					continue
				}
				for _, op := range ix.ops {
					if op.Call.Req != core.ReqCreate || !op.OK() || op.CallAt > c || op.Call.Create == nil {
						continue
					}
					if op.Call.Server != server || !slices.Contains(op.Call.Create.Checks, model.SerfHealthCheckID) {
						continue
					}
					ix.judge(1)
					if t, ok := goneAt[op.Ret.SessionID]; ok && t <= c+b.DeadNode {
						continue
					}
					out = append(out, violation(c+b.DeadNode, "session %s bound to %s's serfHealth not invalidated within %v of the crash at %v", op.Ret.SessionID, server, b.DeadNode, c))
				}
			}
		}
	}
	return out
}

// restartAfter is when server restarted after t (a large value if never).
func (ix *traceIndex) restartAfter(server string, t time.Duration) time.Duration {
	for _, e := range ix.events {
		if e.Kind == core.KindNote && e.At > t && e.Msg == core.NoteRestartPrefix+server {
			return e.At
		}
	}
	return 1 << 62
}

// lockKeys lists the keys a call tries to acquire.
func lockKeys(c *core.Call) []string {
	var out []string
	if c.KV != nil && c.KV.Verb == model.KVLock {
		out = append(out, c.KV.Key)
	}
	for _, op := range c.Txn {
		if op.Verb == model.KVLock {
			out = append(out, op.Key)
		}
	}
	return out
}

// lockSucceeded reports whether a successful op's acquire took.
func lockSucceeded(op *Op) bool {
	if op.Call.KV != nil {
		return op.Ret.OK
	}
	return len(op.Ret.TxnErrors) == 0
}
