package checks

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/recipes"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/recipe"
)

// acceptedWrite is one write a resource accepted, in the resource's order.
type acceptedWrite struct {
	Client  string
	Seq     model.Sequencer
	At      time.Duration
	Checked time.Duration // when its verification was sent (CheckCall)
}

// resourceWrites lists what resource accepted, in the order it accepted.
func ResourceWrites(r *recipes.RecipeResult, resource string) []acceptedWrite {
	var out []acceptedWrite
	if resource == recipes.SemVerified || resource == recipes.SemUnverified {
		for _, w := range r.SemWrites {
			if w.Resource == resource && w.Accepted {
				out = append(out, acceptedWrite{Client: w.Client, Seq: w.Seq, At: w.At, Checked: w.CheckCall})
			}
		}
		return out
	}
	for _, e := range r.Events {
		if e.Kind == core.KindWrite && e.Write.Resource == resource && e.Write.Accepted {
			out = append(out, acceptedWrite{Client: e.Write.Client, Seq: e.Write.Seq, At: e.At, Checked: e.Write.CheckCall})
		}
	}
	return out
}

// occupancy spans each session's accepted writes (first to last, in the
// resource's order) and returns, per write, how many sessions' spans are
// open there. A holder's validity is one contiguous stretch of indexes (a
// session never regains a key or a slot), and a resource that serialises
// its requests and verifies each by a linearizable read accepts them in
// index order; so when k spans overlap, some index had k valid holders,
// and k is at most the recipe's limit.
func occupancy(ws []acceptedWrite) []int {
	first, last := map[string]int{}, map[string]int{}
	for i, w := range ws {
		if _, ok := first[w.Seq.Session]; !ok {
			first[w.Seq.Session] = i
		}
		last[w.Seq.Session] = i
	}
	open := make([]int, len(ws))
	for s, f := range first {
		for i := f; i <= last[s]; i++ {
			open[i]++
		}
	}
	return open
}

// checkExclusive: no more than limit sessions' spans of accepted writes overlap.
func CheckExclusive(ws []acceptedWrite, limit int) []Violation {
	open := occupancy(ws)
	for i, n := range open {
		if n <= limit {
			continue
		}
		// Name the sessions open at i, once: the first excess is the story.
		var who []string
		for s := range spansAt(ws, i) {
			who = append(who, s)
		}
		slices.Sort(who)
		return []Violation{violation(ws[i].At, "resource served %d holders at once (limit %d): %s; write %d by %s with %s@%d",
			n, limit, strings.Join(who, ", "), i, ws[i].Client, ws[i].Seq.Key, ws[i].Seq.LockIndex)}
	}
	return nil
}

// spansAt is the set of sessions whose span of writes contains position i.
func spansAt(ws []acceptedWrite, i int) map[string]bool {
	before, after := map[string]bool{}, map[string]bool{}
	for j, w := range ws {
		if j <= i {
			before[w.Seq.Session] = true
		}
		if j >= i {
			after[w.Seq.Session] = true
		}
	}
	out := map[string]bool{}
	for s := range before {
		if after[s] {
			out[s] = true
		}
	}
	return out
}

// kvState is one server incarnation's KV store rebuilt from its diffs.
type kvState map[string]model.KVEntry

func (st kvState) apply(o *core.StateObs) {
	for _, kc := range o.Keys {
		if kc.After == nil {
			delete(st, kc.Key)
		} else {
			st[kc.Key] = *kc.After
		}
	}
}

// replayStates calls fn after each observation with that server
// incarnation's whole KV store at the observation's index.
func replayStates(ix *traceIndex, fn func(o obsAt, st kvState)) {
	states := map[serverInc]kvState{}
	for _, o := range ix.Obs {
		id := o.inc()
		st := states[id]
		if st == nil {
			st = kvState{}
			states[id] = st
		}
		st.apply(o.Obs)
		fn(o, st)
	}
}

// checkFenceKV: whenever a server's state shows recipeStateKey written, the
// writer's sequencer held the election key at that write's index. Each
// observation is a real state; the election key's entry at the write's
// index is known when its ModifyIndex is not above the write's (it has not
// changed since); otherwise the window hides it and the write is skipped.
func checkFenceKV(ix *traceIndex) []Violation {
	var out []Violation
	ekey := recipe.ElectionKey(recipes.RecipeService)
	seen := map[uint64]bool{}
	replayStates(ix, func(o obsAt, st kvState) {
		changed := slices.ContainsFunc(o.Obs.Keys, func(kc core.KeyChange) bool { return kc.Key == recipes.RecipeStateKey && kc.After != nil })
		fk, ok := st[recipes.RecipeStateKey]
		if !changed || !ok || seen[fk.ModifyIndex] {
			return
		}
		var v recipes.FenceValue
		if err := json.Unmarshal(fk.Value, &v); err != nil {
			seen[fk.ModifyIndex] = true
			ix.judge(1)
			out = append(out, violation(o.At, "%s: %q holds %q, not a fenced write", o.Server, recipes.RecipeStateKey, fk.Value))
			return
		}
		ek, held := st[ekey]
		if held && ek.ModifyIndex > fk.ModifyIndex {
			return // the election key changed after the write, inside this window
		}
		seen[fk.ModifyIndex] = true
		ix.judge(1)
		if !held || ek.Session != v.Seq.Session || ek.LockIndex != v.Seq.LockIndex {
			out = append(out, violation(o.At, "%s: fenced write #%d by %s with %s@%d/%s landed at index %d while %q was held by %q at lock index %d",
				o.Server, v.N, v.Client, v.Seq.Key, v.Seq.LockIndex, v.Seq.Session, fk.ModifyIndex, ekey, ek.Session, ek.LockIndex))
		}
	})
	return out
}

// liveHolders is .lock's Holders that hold their own contender key, and
// all of Holders, in st; bad is set when .lock cannot be read.
func liveHolders(st kvState) (live, listed []string, bad string) {
	lk, ok := st[recipes.RecipeSemPrefix+"/"+recipe.SemaphoreKey]
	if !ok || len(lk.Value) == 0 {
		return nil, nil, ""
	}
	var r recipes.SemRecord
	if err := json.Unmarshal(lk.Value, &r); err != nil {
		return nil, nil, fmt.Sprintf("cannot decode .lock %q: %v", lk.Value, err)
	}
	for h := range r.Holders {
		listed = append(listed, h)
		if e, ok := st[recipes.RecipeSemPrefix+"/"+h]; ok && e.Session == h {
			live = append(live, h)
		}
	}
	slices.Sort(live)
	slices.Sort(listed)
	return live, listed, ""
}

// checkSemaphoreStates: at every observed index on every server, .lock lists
// at most limit holders and at most limit of them hold their contender key.
func checkSemaphoreStates(ix *traceIndex, limit int) []Violation {
	var out []Violation
	replayStates(ix, func(o obsAt, st kvState) {
		if !slices.ContainsFunc(o.Obs.Keys, func(kc core.KeyChange) bool { return strings.HasPrefix(kc.Key, recipes.RecipeSemPrefix+"/") }) {
			return
		}
		ix.judge(1)
		live, listed, bad := liveHolders(st)
		switch {
		case bad != "":
			out = append(out, violation(o.At, "%s at index %d: %s", o.Server, o.Obs.Index, bad))
		case len(live) > limit:
			out = append(out, violation(o.At, "%s at index %d: %d live holders %v, limit %d", o.Server, o.Obs.Index, len(live), live, limit))
		case len(listed) > limit:
			out = append(out, violation(o.At, "%s at index %d: .lock lists %d holders %v, limit %d", o.Server, o.Obs.Index, len(listed), listed, limit))
		}
	})
	return out
}

// liveSpans is, per session, when servers saw it as a live semaphore holder.
func liveSpans(ix *traceIndex) map[string][]interval {
	open := map[serverInc]map[string]time.Duration{}
	out := map[string][]interval{}
	replayStates(ix, func(o obsAt, st kvState) {
		if o.Obs.Replay {
			return
		}
		id := o.inc()
		if open[id] == nil {
			open[id] = map[string]time.Duration{}
		}
		live, _, _ := liveHolders(st)
		for _, s := range live {
			if _, ok := open[id][s]; !ok {
				open[id][s] = o.At
			}
		}
		for s, start := range open[id] {
			if !slices.Contains(live, s) {
				out[s] = append(out[s], interval{Start: start, End: o.At})
				delete(open[id], s)
			}
		}
	})
	for id, m := range open {
		// A crashed incarnation's state says nothing after its crash.
		end := time.Duration(-1)
		if cs := ix.crashes[id.server]; id.n < len(cs) {
			end = cs[id.n]
		}
		for s, start := range m {
			out[s] = append(out[s], interval{Start: start, End: end})
		}
	}
	return out
}

// checkSemaphoreValid: each request the verified resource accepted came from
// a session some server saw as a live holder at an instant between the
// verification's send and the acceptance.
func checkSemaphoreValid(r *recipes.RecipeResult, ix *traceIndex) []Violation {
	spans := liveSpans(ix)
	var out []Violation
	for _, w := range ResourceWrites(r, recipes.SemVerified) {
		ix.judge(1)
		ok := slices.ContainsFunc(spans[w.Seq.Session], func(iv interval) bool {
			return iv.Start <= w.At && (iv.End < 0 || iv.End >= w.Checked)
		})
		if !ok {
			out = append(out, violation(w.At, "%s accepted %s's request with %s@%d/%s, not a live holder between %v and %v",
				recipes.SemVerified, w.Client, w.Seq.Key, w.Seq.LockIndex, w.Seq.Session, w.Checked, w.At))
		}
	}
	return out
}

// Takeover is one holder death and how long the recipe took to replace it.
type Takeover struct {
	Death    recipes.Death
	Deadline time.Duration // by when a new holder had to be in place
	// Needed is false when the dead holder kept its holding past the
	// deadline (a short pause or partition: nothing to take over).
	Needed bool
	// Took is from the death to the new holder (-1: never).
	Took time.Duration
}

// Takeovers measures every death's takeover and returns violations of the
// bound. A new holder is in place once the processes other than the dead
// holder's session believe in as many holds as the recipe has slots.
func takeovers(r *recipes.RecipeResult, ix *traceIndex) ([]Violation, []Takeover) {
	holdings := ix.Holdings()
	var out []Violation
	var tks []Takeover
	for _, d := range r.Deaths {
		tk := Takeover{Death: d, Deadline: takeoverDeadline(r, d.At), Took: -1}
		t := holdings[d.Seq]
		tk.Needed = t != nil && t.End >= 0 && t.End <= tk.Deadline
		if at, ok := replacedAt(r, d, holdings); ok {
			tk.Took = at - d.At
		}
		tks = append(tks, tk)
		if tk.Needed {
			ix.judge(1)
		}
		switch {
		case !tk.Needed:
		case tk.Took < 0:
			out = append(out, violation(tk.Deadline, "holder %s (%s@%d) died at %v (%s) and nobody took over (bound %v)", d.Client, d.Seq.Key, d.Seq.LockIndex, d.At, d.Kind, tk.Deadline-d.At))
		case d.At+tk.Took > tk.Deadline:
			out = append(out, violation(d.At+tk.Took, "holder %s (%s@%d) died at %v (%s): takeover took %v, bound %v", d.Client, d.Seq.Key, d.Seq.LockIndex, d.At, d.Kind, tk.Took, tk.Deadline-d.At))
		}
	}
	return out, tks
}

// takeoverDeadline is the death's bound, pushed out by any server fault
// overlapping it to the fault's end plus an election plus the bound.
func takeoverDeadline(r *recipes.RecipeResult, at time.Duration) time.Duration {
	b := r.Bounds
	deadline := at + b.Takeover
	for changed := true; changed; {
		changed = false
		for _, f := range r.Header.Faults {
			start, end := r.Start+f.At, r.Start+f.End()
			if core.HolderFault(f.Kind) || start >= deadline || end <= at {
				continue
			}
			if d := max(at, end) + b.Election + b.Takeover; d > deadline {
				deadline, changed = d, true
			}
		}
	}
	return deadline
}

// replacedAt is the first instant at or after the death when other sessions
// fill every slot: each believed by its process (from Campaign or Acquire
// returning to Lost, release or crash) and valid on the servers (its
// holding of the key not yet ended).
func replacedAt(r *recipes.RecipeResult, d recipes.Death, holdings map[model.Sequencer]*holding) (time.Duration, bool) {
	type span struct{ from, to time.Duration }
	var spans []span
	for _, h := range r.Holds {
		if h.Seq.Session == d.Seq.Session {
			continue
		}
		to := time.Duration(math.MaxInt64)
		if h.Ended >= 0 {
			to = h.Ended
		}
		if h.Lost >= 0 {
			to = min(to, h.Lost)
		}
		if t := holdings[h.Seq]; t != nil && t.End >= 0 {
			to = min(to, t.End)
		}
		if to > d.At {
			spans = append(spans, span{max(h.Acquired, d.At), to})
		}
	}
	times := []time.Duration{d.At}
	for _, s := range spans {
		times = append(times, s.from)
	}
	slices.Sort(times)
	for _, t := range times {
		n := 0
		for _, s := range spans {
			if s.from <= t && t < s.to {
				n++
			}
		}
		if n >= r.Slots() {
			return t, true
		}
	}
	return 0, false
}

// RecipeStats are the numbers a recipe run reports (not judged).
type RecipeStats struct {
	Holds int
	// Fenced (election: fenced resource; semaphore: verified resource).
	FencedAccepted, FencedRefused int
	// Unfenced (election: unfenced resource; semaphore: unverified).
	UnfencedAccepted int
	// UnfencedOverlap counts accepted unfenced writes at which more
	// sessions' spans were open than the recipe admits; UnfencedMaxOpen is
	// the most open at once.
	UnfencedOverlap, UnfencedMaxOpen int
	// UnfencedStale counts accepted unfenced writes from a holder whose
	// holding (semaphore: live holding) had ended on every server.
	UnfencedStale int
	FenceKVOK     int
	FenceKVStale  int
	Takeovers     []Takeover
}

// statsOf computes a run's numbers.
func StatsOf(r *recipes.RecipeResult) RecipeStats {
	ix := NewIndex(r.Events)
	st := RecipeStats{Holds: len(r.Holds)}
	fenced, unfenced := core.ResFenced, core.ResUnfenced
	if r.Config.Recipe == recipes.RecipeSemaphore {
		fenced, unfenced = recipes.SemVerified, recipes.SemUnverified
	}
	for _, e := range r.Events {
		if e.Kind == core.KindWrite && e.Write.Resource == fenced {
			if e.Write.Accepted {
				st.FencedAccepted++
			} else {
				st.FencedRefused++
			}
		}
	}
	ws := ResourceWrites(r, unfenced)
	st.UnfencedAccepted = len(ws)
	for _, n := range occupancy(ws) {
		st.UnfencedMaxOpen = max(st.UnfencedMaxOpen, n)
		if n > r.Slots() {
			st.UnfencedOverlap++
		}
	}
	var ended func(seq model.Sequencer, at time.Duration) bool
	if r.Config.Recipe == recipes.RecipeSemaphore {
		spans := liveSpans(ix)
		ended = func(seq model.Sequencer, at time.Duration) bool {
			return !slices.ContainsFunc(spans[seq.Session], func(iv interval) bool { return iv.End < 0 || iv.End >= at })
		}
	} else {
		holdings := ix.Holdings()
		ended = func(seq model.Sequencer, at time.Duration) bool {
			t := holdings[seq]
			return t != nil && t.End >= 0 && t.End < at
		}
	}
	for _, w := range ws {
		if ended(w.Seq, w.At) {
			st.UnfencedStale++
		}
	}
	for _, f := range r.FenceKVs {
		switch f.Outcome {
		case "ok":
			st.FenceKVOK++
		case "stale":
			st.FenceKVStale++
		}
	}
	_, st.Takeovers = takeovers(r, ix)
	return st
}
