package sim

import (
	"encoding/json"
	"flag"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/recipes"
)

// runRecipeSeed runs cfg in a fresh bubble with raft's global math/rand
// seeded from cfg.Seed.
func runRecipeSeed(t *testing.T, cfg recipes.RecipeConfig) *recipes.RecipeResult {
	t.Helper()
	var res *recipes.RecipeResult
	var err error
	start := time.Now()
	synctest.Test(t, func(t *testing.T) {
		//lint:ignore SA1019 raft, memberlist and serf no longer draw from the global source (third_party/); seeding it keeps any draw still made there repeatable.
		rand.Seed(int64(cfg.Seed))
		res, err = recipes.RunRecipe(cfg)
	})
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	wall := time.Since(start)
	t.Logf("seed %d %s: virtual %v, wall %v (%s)", cfg.Seed, cfg.Recipe, res.Virtual.Round(time.Second), wall.Round(time.Millisecond), speedup(res.Virtual, wall))
	return res
}

// expectClean fails the test on any violation and logs the run's numbers.
func expectClean(t *testing.T, res *recipes.RecipeResult) checks.RecipeStats {
	t.Helper()
	for _, v := range checks.CheckRecipeRun(res) {
		t.Errorf("seed %d: %v", res.Config.Seed, v)
	}
	st := checks.StatsOf(res)
	t.Logf("seed %d %s: virtual %v, %d events, %d holds; fenced %d accepted / %d refused; unfenced %d accepted, %d stale, %d overlapping (max %d open); fence-kv %d ok / %d stale",
		res.Config.Seed, res.Config.Recipe, res.Virtual.Round(time.Second), len(res.Events), st.Holds, st.FencedAccepted, st.FencedRefused,
		st.UnfencedAccepted, st.UnfencedStale, st.UnfencedOverlap, st.UnfencedMaxOpen, st.FenceKVOK, st.FenceKVStale)
	for _, tk := range st.Takeovers {
		t.Logf("  %s of %s at %v: needed %v, took %v, bound %v", tk.Death.Kind, tk.Death.Client, tk.Death.At.Round(time.Millisecond),
			tk.Needed, tk.Took.Round(time.Millisecond), (tk.Deadline - tk.Death.At).Round(time.Millisecond))
	}
	return st
}

// at formats a trace time; negative means it never happened.
func at(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return "at " + d.Round(time.Millisecond).String()
}

// scenario is a named single-fault run.
func scenario(seed uint64, kind string, f core.Fault) recipes.RecipeConfig {
	cfg := recipes.DefaultRecipeConfig(seed, kind)
	f.ID = 1
	cfg.Schedule = []core.Fault{f}
	cfg.Faults = nil
	cfg.Duration = f.End() + 10*time.Second
	// A leader steps down only because of the fault; slot holders come and
	// go, so that the paused one's slot is wanted.
	cfg.NoResign = kind == recipes.RecipeElection
	return cfg
}

// oneDeath returns the run's only death, which must have needed a takeover
// that came within the bound.
func oneDeath(t *testing.T, st checks.RecipeStats) checks.Takeover {
	t.Helper()
	if len(st.Takeovers) != 1 {
		t.Fatalf("want one holder death, got %+v", st.Takeovers)
	}
	tk := st.Takeovers[0]
	if !tk.Needed || tk.Took < 0 || tk.Death.At+tk.Took > tk.Deadline {
		t.Errorf("takeover %+v: want a needed takeover within the bound", tk)
	}
	return tk
}

// writesBy counts the writes to resource by session after t: those it
// accepted after a sequencer check sent after t (a check sent before may
// legitimately let a write in a moment after t, S50), and those it refused
// after t.
func writesBy(res *recipes.RecipeResult, resource, session string, after time.Duration) (accepted, refused int) {
	for _, e := range res.Events {
		at := e.At
		if e.Kind == core.KindWrite && e.Write.Accepted && e.Write.CheckCall > 0 {
			at = e.Write.CheckCall
		}
		if e.Kind == core.KindWrite && e.Write.Resource == resource && e.Write.Seq.Session == session && at > after {
			if e.Write.Accepted {
				accepted++
			} else {
				refused++
			}
		}
	}
	return accepted, refused
}

// TestRecipeElectionPausedLeader: the leader stops (GC-pause-like) between
// checking Lost and writing, for longer than TTL×2 plus lock-delay. Another
// candidate takes over within the bound; on resume the old leader writes
// with its stale sequencer: the fenced resource and recipe.Fence refuse it,
// the unfenced resource accepts it over the new leader's writes (S50). The
// pause lands at the process's checkpoint by construction
// (Fault.AtCheckpoint): one that caught it mid-write (its unfenced write
// out before the pause, the fenced one after) left it only refusals after
// the resume, and where the pause caught it depended on goroutine order.
func TestRecipeElectionPausedLeader(t *testing.T) {
	res := runRecipeSeed(t, scenario(12, recipes.RecipeElection, core.Fault{Kind: core.FaultHolderPause, At: 10 * time.Second, Dur: 35 * time.Second, AtCheckpoint: true}))
	st := expectClean(t, res)
	tk := oneDeath(t, st)
	old := tk.Death.Seq.Session
	resumed := res.Start + 45*time.Second
	if acc, ref := writesBy(res, core.ResFenced, old, resumed); acc != 0 || ref == 0 {
		t.Errorf("fenced resource after the resume: %d accepted, %d refused from the old leader; want 0 and at least 1", acc, ref)
	}
	if acc, _ := writesBy(res, core.ResUnfenced, old, resumed); acc == 0 {
		t.Errorf("unfenced resource accepted nothing from the resumed old leader")
	}
	if st.UnfencedOverlap == 0 || st.UnfencedStale == 0 || st.FenceKVStale == 0 {
		t.Errorf("want stale unfenced writes and a refused recipe.Fence, got %+v", st)
	}

	// Teeth: the same checks fail on the resource that does not check
	// sequencers, relabelled as the fenced one.
	if vs := checks.CheckExclusive(checks.ResourceWrites(res, core.ResUnfenced), 1); len(vs) == 0 {
		t.Error("exclusive check passed the unfenced resource's writes")
	} else {
		t.Logf("unfenced resource, as the checks see it: %s", vs[0].Msg)
	}
	relabelled := unfencedAsFenced(res.Events)
	if vs, err := checks.RunCheck(checks.CheckFenced, relabelled); err != nil || len(vs) == 0 {
		t.Errorf("fenced-resource check passed the unfenced resource's writes (%v)", err)
	} else {
		t.Logf("%d stale acceptances, first: %v", len(vs), vs[0])
	}
}

// unfencedAsFenced turns the unfenced resource's writes into a fenced
// resource's that claims to have checked each sequencer as it accepted it.
func unfencedAsFenced(events []core.Event) []core.Event {
	var out []core.Event
	for _, e := range events {
		switch {
		case e.Kind == core.KindWrite && e.Write.Resource == core.ResFenced:
			continue
		case e.Kind == core.KindWrite && e.Write.Resource == core.ResUnfenced:
			w := *e.Write
			w.Resource, w.Mode, w.CheckCall = core.ResFenced, core.FenceTxn, e.At
			e.Write = &w
		}
		out = append(out, e)
	}
	return out
}

// TestRecipeElectionPartitionedLeader: the leader's host is cut off from
// every server; its link to the resources stays up but slow (15s one way),
// so writes it sent while it still believed arrive after the takeover. The
// recipe gives up (Lost) before the server ends the holding; the new leader
// takes over within the bound; the old leader's late fenced writes are
// refused, its unfenced ones accepted.
func TestRecipeElectionPartitionedLeader(t *testing.T) {
	res := runRecipeSeed(t, scenario(12, recipes.RecipeElection, core.Fault{Kind: core.FaultHolderPartition, At: 10 * time.Second, Dur: 40 * time.Second, Param: 15 * time.Second}))
	st := expectClean(t, res)
	tk := oneDeath(t, st)
	old := tk.Death.Seq
	held := checks.NewIndex(res.Events).Holdings()[old]
	if held == nil || held.End < 0 {
		t.Fatalf("old leader's holding %+v never ended", held)
	}
	for _, h := range res.Holds {
		if h.Seq == old {
			t.Logf("old leader: Lost closed %s (%s), holding ended on the servers %s", at(h.Lost), h.Why, at(held.End))
			if h.Lost < 0 || h.Lost > held.End {
				t.Errorf("the recipe noticed the loss at %v, after the server ended the holding at %v", h.Lost, held.End)
			}
		}
	}
	if acc, ref := writesBy(res, core.ResFenced, old.Session, held.End); acc != 0 || ref == 0 {
		t.Errorf("fenced resource after the holding ended: %d accepted, %d refused from the old leader; want 0 and at least 1", acc, ref)
	}
	if st.UnfencedStale == 0 {
		t.Errorf("no stale unfenced write accepted: %+v", st)
	}
}

// TestRecipeElectionSlowClockPartitionedLeader: the partitioned leader's
// clock also runs at 0.25, so the recipe's one-TTL guard (S18) stretches
// past the server's TTL×2: the old leader still believes, and writes over a
// fast link, after its holding ended. The fenced resource refuses it (and
// the refusal is what makes it step down); the unfenced one's acceptance
// of such writes is counted.
func TestRecipeElectionSlowClockPartitionedLeader(t *testing.T) {
	res := runRecipeSeed(t, scenario(15, recipes.RecipeElection, core.Fault{Kind: core.FaultHolderPartition, At: 10 * time.Second, Dur: 40 * time.Second, Rate: 0.25}))
	st := expectClean(t, res)
	old := oneDeath(t, st).Death.Seq
	held := checks.NewIndex(res.Events).Holdings()[old]
	if held == nil || held.End < 0 {
		t.Fatalf("old leader's holding %+v never ended", held)
	}
	for _, h := range res.Holds {
		if h.Seq == old {
			t.Logf("old leader: Lost closed %s, stopped %s (%s); holding ended on the servers %s", at(h.Lost), at(h.Ended), h.Why, at(held.End))
		}
	}
	if acc, ref := writesBy(res, core.ResFenced, old.Session, held.End); acc != 0 || ref == 0 {
		t.Errorf("fenced resource after the holding ended: %d accepted, %d refused from the old leader; want 0 and at least 1", acc, ref)
	}
}

// TestRecipeElectionCrashedLeader: the leader's process stops for good
// without releasing; its TTL session ends and another candidate leads
// within the bound.
func TestRecipeElectionCrashedLeader(t *testing.T) {
	res := runRecipeSeed(t, scenario(13, recipes.RecipeElection, core.Fault{Kind: core.FaultHolderCrash, At: 10 * time.Second, Dur: time.Second}))
	oneDeath(t, expectClean(t, res))
}

// TestRecipeSemaphorePausedHolder: Limit 2, five contenders; one holder is
// paused past its TTL×2, its slot goes to another, and on resume it writes
// again. The verified resource refuses it and never serves more than two
// holders at once; the unverified one serves three.
func TestRecipeSemaphorePausedHolder(t *testing.T) {
	res := runRecipeSeed(t, scenario(14, recipes.RecipeSemaphore, core.Fault{Kind: core.FaultHolderPause, At: 10 * time.Second, Dur: 35 * time.Second}))
	st := expectClean(t, res)
	tk := oneDeath(t, st)
	resumed := res.Start + 45*time.Second
	refused := 0
	for _, w := range res.SemWrites {
		if w.Resource == recipes.SemVerified && w.Seq.Session == tk.Death.Seq.Session && w.At > resumed && !w.Accepted {
			refused++
		}
	}
	if refused == 0 {
		t.Error("the verified resource accepted the resumed holder or never heard from it")
	}
	if st.UnfencedMaxOpen <= res.Config.Limit {
		t.Errorf("unverified resource served at most %d at once; want more than the limit %d", st.UnfencedMaxOpen, res.Config.Limit)
	}
	if vs := checks.CheckExclusive(checks.ResourceWrites(res, recipes.SemUnverified), res.Config.Limit); len(vs) == 0 {
		t.Error("exclusive check passed the unverified resource")
	} else {
		t.Logf("unverified resource, as the checks see it: %s", vs[0].Msg)
	}
}

// Flags for TestRecipeSeeds: -recipe-seeds N runs N seeds of each recipe.
var (
	flagRecipeSeeds = flag.Int("recipe-seeds", 0, "seeds per recipe for TestRecipeSeeds (0: the default batch)")
	flagRecipeFirst = flag.Uint64("recipe-first-seed", 1, "first seed of TestRecipeSeeds")
)

// TestRecipeSeeds runs both recipes under seeded random faults (holder
// pauses, partitions, crashes, slow links, clock skew, and server faults)
// and checks every recipe property on each run.
func TestRecipeSeeds(t *testing.T) {
	n := *flagRecipeSeeds
	if n == 0 {
		// ≈6 s of wall time for both recipes, on client agents (more:
		// -recipe-seeds).
		n = 3
	}
	start := time.Now()
	var tks []time.Duration
	overlaps := 0
	for _, kind := range []string{recipes.RecipeElection, recipes.RecipeSemaphore} {
		for i := range n {
			seed := *flagRecipeFirst + uint64(i)
			res := runRecipeSeed(t, recipes.DefaultRecipeConfig(seed, kind))
			st := expectClean(t, res)
			overlaps += st.UnfencedOverlap
			for _, tk := range st.Takeovers {
				if tk.Needed {
					tks = append(tks, tk.Took)
				}
			}
		}
	}
	slices.Sort(tks)
	t.Logf("%d runs in %v wall; %d needed takeovers, times %v; %d unfenced overlapping writes", 2*n, time.Since(start).Round(time.Millisecond), len(tks), tks, overlaps)
}

// TestRecipeReplay runs one seeded recipe run a few times at GOMAXPROCS=1:
// the seed must fix the schedule, clocks and plans exactly; how often the
// whole trace replays is reported (Go's scheduler is not seeded).
func TestRecipeReplay(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	digests := map[string]int{}
	var header string
	const runs = 3
	for i := range runs {
		res := runRecipeSeed(t, recipes.DefaultRecipeConfig(3, recipes.RecipeElection))
		h, err := json.Marshal(res.Header)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			header = string(h)
		} else if string(h) != header {
			t.Fatalf("run %d drew a different schedule or clocks", i)
		}
		digests[core.Digest(res.Events)]++
	}
	best := 0
	for _, c := range digests {
		best = max(best, c)
	}
	t.Logf("%d of %d runs replayed the most common trace (%d distinct)", best, runs, len(digests))
}
