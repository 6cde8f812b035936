package checks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/recipes"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/recipe"
)

// The recipe checks on known-bad inputs: each must report, and the
// matching good input must pass.

var electKey = recipe.ElectionKey(recipes.RecipeService)

func aw(session string, li uint64) acceptedWrite {
	return acceptedWrite{Client: "c-" + session, Seq: model.Sequencer{Key: electKey, LockIndex: li, Session: session}}
}

func TestRecipeExclusiveCheck(t *testing.T) {
	cases := []struct {
		name  string
		ws    []acceptedWrite
		limit int
		bad   bool
	}{
		{"leaders in turn", []acceptedWrite{aw("a", 1), aw("a", 1), aw("b", 2), aw("b", 2)}, 1, false},
		{"old leader after new", []acceptedWrite{aw("a", 1), aw("b", 2), aw("a", 1)}, 1, true},
		{"two slots in turn", []acceptedWrite{aw("a", 1), aw("b", 1), aw("a", 1), aw("c", 1), aw("b", 1)}, 2, false},
		{"one slot in turn beside a long holder", []acceptedWrite{aw("a", 1), aw("b", 1), aw("c", 1), aw("a", 1)}, 2, false},
		{"three at once", []acceptedWrite{aw("a", 1), aw("b", 1), aw("c", 1), aw("b", 1), aw("a", 1)}, 2, true},
	}
	for _, c := range cases {
		vs := CheckExclusive(c.ws, c.limit)
		if (len(vs) > 0) != c.bad {
			t.Errorf("%s: violations %v, want bad=%v", c.name, vs, c.bad)
		}
	}
}

// rtrace builds a synthetic recipe trace of server observations.
type rtrace struct{ ev []core.Event }

func (b *rtrace) add(at time.Duration, e core.Event) {
	e.At, e.Seq = at, len(b.ev)
	b.ev = append(b.ev, e)
}

// set records server n1 applying kvs at index idx (each entry's ModifyIndex
// is its own); before is what the keys held.
func (b *rtrace) obs(at time.Duration, idx uint64, changes ...core.KeyChange) {
	b.obsOn("n1", at, idx, changes...)
}

func (b *rtrace) obsOn(server string, at time.Duration, idx uint64, changes ...core.KeyChange) {
	b.add(at, core.Event{Kind: core.KindState, Node: server, State: &core.StateObs{Index: idx, Leader: server == "n1", Keys: changes}})
}

func kvAt(key, session string, li, mod uint64, value []byte) *model.KVEntry {
	return &model.KVEntry{Key: key, Session: session, LockIndex: li, ModifyIndex: mod, CreateIndex: 1, Value: value}
}

func fenced(t *testing.T, session string, li, mod uint64) core.KeyChange {
	t.Helper()
	v, err := json.Marshal(recipes.FenceValue{Client: "c-" + session, Seq: model.Sequencer{Key: electKey, LockIndex: li, Session: session}, N: int(mod)})
	if err != nil {
		t.Fatal(err)
	}
	return core.KeyChange{Key: recipes.RecipeStateKey, After: kvAt(recipes.RecipeStateKey, "", 0, mod, v)}
}

func TestRecipeFenceKVCheck(t *testing.T) {
	var b rtrace
	b.obs(secs(1), 5, core.KeyChange{Key: electKey, After: kvAt(electKey, "s1", 1, 5, nil)})
	b.obs(secs(2), 6, fenced(t, "s1", 1, 6)) // s1 holds: fine
	b.obs(secs(3), 7, core.KeyChange{Key: electKey, Before: kvAt(electKey, "s1", 1, 5, nil), After: kvAt(electKey, "s2", 2, 7, nil)})
	b.obs(secs(4), 8, fenced(t, "s1", 1, 8)) // s2 holds: stale write landed
	// One window hides whether s2 held at 9: skipped, not judged.
	b.obs(secs(5), 10, fenced(t, "s2", 2, 9), core.KeyChange{Key: electKey, Before: kvAt(electKey, "s2", 2, 7, nil), After: kvAt(electKey, "", 2, 10, nil)})
	vs := checkFenceKV(NewIndex(b.ev))
	if len(vs) != 1 || !strings.Contains(vs[0].Msg, "index 8") {
		t.Fatalf("want one violation at index 8, got %v", vs)
	}
}

func semLock(t *testing.T, mod uint64, holders ...string) core.KeyChange {
	t.Helper()
	r := recipes.SemRecord{Limit: 2, Holders: map[string]bool{}}
	for _, h := range holders {
		r.Holders[h] = true
	}
	v, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	k := recipes.RecipeSemPrefix + "/" + recipe.SemaphoreKey
	return core.KeyChange{Key: k, After: kvAt(k, "", 0, mod, v)}
}

func contender(s string, held bool, mod uint64) core.KeyChange {
	k := recipes.RecipeSemPrefix + "/" + s
	holder := ""
	if held {
		holder = s
	}
	return core.KeyChange{Key: k, After: kvAt(k, holder, 1, mod, nil)}
}

func TestSemaphoreLimitCheck(t *testing.T) {
	var b rtrace
	b.obs(secs(1), 3, contender("a", true, 1), contender("b", true, 2), contender("c", true, 3))
	b.obs(secs(2), 4, semLock(t, 4, "a", "b")) // two live holders: fine
	b.obs(secs(3), 5, semLock(t, 5, "a", "b", "c"))
	b.obs(secs(4), 6, contender("c", false, 6)) // c no longer live, still listed
	b.obs(secs(5), 7, semLock(t, 7, "a", "b"))
	vs := checkSemaphoreStates(NewIndex(b.ev), 2)
	if len(vs) != 2 || !strings.Contains(vs[0].Msg, "3 live holders") || !strings.Contains(vs[1].Msg, "lists 3") {
		t.Fatalf("want 3 live holders at index 5, 3 listed at index 6; got %v", vs)
	}
}

func TestSemaphoreValidCheck(t *testing.T) {
	var b rtrace
	b.obs(secs(1), 3, contender("a", true, 1), contender("b", true, 2), semLock(t, 3, "a", "b"))
	// n2 saw the same, then crashed: its frozen state vouches for nobody later.
	b.obsOn("n2", secs(1.5), 3, contender("a", true, 1), contender("b", true, 2), semLock(t, 3, "a", "b"))
	b.add(secs(3), core.Event{Kind: core.KindNote, Node: "n2", Msg: core.NoteCrashPrefix + "n2"})
	b.obs(secs(10), 4, contender("a", false, 4))
	seq := func(s string) model.Sequencer {
		return model.Sequencer{Key: recipes.RecipeSemPrefix + "/" + s, LockIndex: 1, Session: s}
	}
	r := &recipes.RecipeResult{Config: recipes.RecipeConfig{Recipe: recipes.RecipeSemaphore, Limit: 2}, Events: b.ev, SemWrites: []recipes.SemWrite{
		{Resource: recipes.SemVerified, Client: "a", Seq: seq("a"), CheckCall: secs(5), At: secs(5.1), Accepted: true},    // live
		{Resource: recipes.SemVerified, Client: "a", Seq: seq("a"), CheckCall: secs(9.9), At: secs(10.2), Accepted: true}, // ended within the check
		{Resource: recipes.SemVerified, Client: "a", Seq: seq("a"), CheckCall: secs(11), At: secs(11.1), Accepted: true},  // stale
		{Resource: recipes.SemVerified, Client: "c", Seq: seq("c"), CheckCall: secs(6), At: secs(6.1), Accepted: true},    // never admitted
		{Resource: recipes.SemVerified, Client: "c", Seq: seq("c"), CheckCall: secs(7), At: secs(7.1)},                    // refused: fine
		{Resource: recipes.SemUnverified, Client: "c", Seq: seq("c"), At: secs(7.2), Accepted: true},                      // not judged
	}}
	vs := checkSemaphoreValid(r, NewIndex(r.Events))
	if len(vs) != 2 || vs[0].At != secs(11.1) || vs[1].At != secs(6.1) {
		t.Fatalf("want violations at 11.1s and 6.1s, got %v", vs)
	}
}

// takeoverRun is an election where s1 dies at 10s and its holding ends at
// 30s; s2's hold (if acquired > 0) begins then.
func takeoverRun(t *testing.T, holdingEnds bool, acquired time.Duration, serverFault *core.Fault) *recipes.RecipeResult {
	t.Helper()
	hdr := &core.RunHeader{}
	if serverFault != nil {
		hdr.Faults = []core.Fault{*serverFault}
	}
	var b rtrace
	b.add(0, core.Event{Kind: core.KindRun, Run: hdr})
	b.obs(secs(1), 5, core.KeyChange{Key: electKey, After: kvAt(electKey, "s1", 1, 5, nil)})
	if holdingEnds {
		b.obs(secs(30), 6, core.KeyChange{Key: electKey, Before: kvAt(electKey, "s1", 1, 5, nil), After: kvAt(electKey, "", 1, 6, nil)})
	}
	s1 := model.Sequencer{Key: electKey, LockIndex: 1, Session: "s1"}
	r := &recipes.RecipeResult{Config: recipes.RecipeConfig{Recipe: recipes.RecipeElection}, Header: *hdr, Events: b.ev,
		Bounds: recipes.RecipeBounds{Takeover: secs(27), Election: secs(10)},
		Holds:  []recipes.HoldRecord{{Client: "c1", Seq: s1, Acquired: secs(1), Lost: -1, Ended: -1}},
		Deaths: []recipes.Death{{Fault: 1, Kind: core.FaultHolderCrash, At: secs(10), End: -1, Client: "c1", Seq: s1}}}
	if acquired > 0 {
		s2 := model.Sequencer{Key: electKey, LockIndex: 2, Session: "s2"}
		b.obs(acquired, 7, core.KeyChange{Key: electKey, Before: kvAt(electKey, "", 1, 6, nil), After: kvAt(electKey, "s2", 2, 7, nil)})
		r.Events = b.ev
		r.Holds = append(r.Holds, recipes.HoldRecord{Client: "c2", Seq: s2, Acquired: acquired, Lost: -1, Ended: -1})
	}
	return r
}

func TestRecipeTakeoverCheck(t *testing.T) {
	partition := &core.Fault{ID: 2, Kind: core.FaultPartition, At: secs(15), Dur: secs(10)}
	cases := []struct {
		name     string
		r        *recipes.RecipeResult
		bad      bool
		deadline time.Duration
	}{
		{"in time", takeoverRun(t, true, secs(31), nil), false, secs(37)},
		{"late", takeoverRun(t, true, secs(40), nil), true, secs(37)},
		{"never", takeoverRun(t, true, 0, nil), true, secs(37)},
		{"holder survived", takeoverRun(t, false, 0, nil), false, secs(37)},
		{"late but a server fault intervened", takeoverRun(t, true, secs(40), partition), false, secs(25 + 10 + 27)},
	}
	for _, c := range cases {
		vs, tks := takeovers(c.r, NewIndex(c.r.Events))
		if (len(vs) > 0) != c.bad || len(tks) != 1 || tks[0].Deadline != c.deadline {
			t.Errorf("%s: violations %v, takeovers %+v; want bad=%v, deadline %v", c.name, vs, tks, c.bad, c.deadline)
		}
	}
}

func TestRecipeBounds(t *testing.T) {
	b := recipes.DeriveRecipeBounds(10*time.Second, 3*time.Second, 1)
	if b.Takeover != 27*time.Second {
		t.Errorf("TTL 10s ×2 + lock-delay 3s + react 4s = %v, want 27s", b.Takeover)
	}
	// A slow server clock stretches the server's part; lock-delay is capped at 60s.
	if b := recipes.DeriveRecipeBounds(10*time.Second, 2*time.Minute, 0.5); b.Takeover != 164*time.Second {
		t.Errorf("(20s + 60s)/0.5 + 4s = %v, want 2m44s", b.Takeover)
	}
}

func TestRecipeConfigRejected(t *testing.T) {
	good := recipes.DefaultRecipeConfig(1, recipes.RecipeSemaphore)
	bad := []func(*recipes.RecipeConfig){
		func(c *recipes.RecipeConfig) { c.Recipe = "mutex" },
		func(c *recipes.RecipeConfig) { c.Contenders = 1 },
		func(c *recipes.RecipeConfig) { c.TTL = 5 * time.Second },
		func(c *recipes.RecipeConfig) { c.LockDelay = -time.Second },
		func(c *recipes.RecipeConfig) { c.Limit = 0 },
		func(c *recipes.RecipeConfig) { c.Limit = c.Contenders },
		func(c *recipes.RecipeConfig) { c.Duration = 0 },
	}
	for i, mut := range bad {
		c := good
		mut(&c)
		// Rejected before anything is created, so no bubble is needed.
		if res, err := recipes.RunRecipe(c); err == nil || res != nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
}

func TestRecipeScheduleSeeded(t *testing.T) {
	a := core.NewSchedule(7, recipes.RecipeSchedule(3), recipes.RecipeFaultKinds, 5*time.Second, 10*time.Minute)
	b := core.NewSchedule(7, recipes.RecipeSchedule(3), recipes.RecipeFaultKinds, 5*time.Second, 10*time.Minute)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("schedules of one seed differ in length: %d, %d", len(a), len(b))
	}
	crashes := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("fault %d differs: %v vs %v", i, a[i], b[i])
		}
		if a[i].Kind == core.FaultHolderCrash {
			crashes++
		}
		if a[i].End() > 10*time.Minute || (i > 0 && a[i].At < a[i-1].End()) {
			t.Errorf("fault %v outside the window or overlapping the previous one", a[i])
		}
	}
	if crashes > 1 {
		t.Errorf("%d crashes among 3 contenders: someone must be left to take over", crashes)
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
