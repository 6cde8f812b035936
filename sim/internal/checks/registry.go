package checks

import (
	"fmt"

	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/recipes"
)

// Names of the checks, as reported on failure and cited in SPEC.md's Sim
// column. They are exported although not every one is used outside this
// package: spec/traceability_test.go reads the Check… constants of sim/ as
// the list of names a Sim cell may cite.
const (
	CheckLinearizable    = "linearizable"
	CheckFenced          = "fenced-resource"
	CheckSequencer       = "sequencer-unique"
	CheckTTL             = "ttl-lower-bound"
	CheckLockDelay       = "lock-delay"
	CheckBehaviour       = "invalidation-behaviour"
	CheckDurable         = "no-lost-writes"
	CheckLiveness        = "liveness"
	CheckRecipeExclusive = "recipe-exclusive"
	CheckRecipeFenceKV   = "recipe-fence-kv"
	CheckRecipeTakeover  = "recipe-takeover"
	CheckSemaphoreLimit  = "semaphore-limit"
	CheckSemaphoreValid  = "semaphore-valid"
	CheckHealthyLinks    = "no-failure-on-healthy-links"
	CheckFalseDeadFenced = "false-dead-holder-fenced"
	CheckDeadHolder      = "dead-holder-invalidated"
	CheckQueryBound      = "query-bound-to-session"
	CheckAgentExpiry     = "agent-check-expiry"
	CheckAgentRecord     = "agent-node-record"
	CheckAgentWritten    = "agent-node-record-written"
	CheckStopsOnSync     = "stops-on-failed-fsync"
	CheckRejoins         = "rejoins-after-power-loss"
)

// runKind is a set of the kinds of run a check applies to.
type runKind uint8

const (
	SeededRun runKind = 1 << iota
	electionRun
	semaphoreRun
)

// checkInput is what a check reads: the trace taken apart, and for recipe
// runs the recipe's own records.
type checkInput struct {
	ix     *traceIndex
	recipe *recipes.RecipeResult // nil in seeded runs
}

// check is one property of the registry. Every check is a pure function of
// a recorded run, so a saved run can be re-checked offline.
type check struct {
	Name    string
	clauses []string
	what    string
	runs    runKind
	fn      func(in checkInput) []Violation
}

// registry is where every property the simulator checks is defined: its
// name, the SPEC clauses it checks, what it checks, the runs it applies to
// and its function (each function's comment says how). Linearizability is
// the one check outside it: it needs the porcupine models and a time budget
// (evaluate.go, linearize.go). Each check's teeth tests (known-bad input
// that it must fail) are in checks_test.go, recipes_checks_test.go and
// variants_test.go.
var registry = []check{
	{CheckFenced, []string{"S40", "S43", "S50"}, "the fenced resource never accepts a stale sequencer",
		SeededRun | electionRun, seeded(checkFenced)},
	{CheckSequencer, []string{"S33", "S41", "S52"}, "a (key, LockIndex) names one session, and a key's LockIndex never goes down while it exists",
		SeededRun | electionRun, seeded(checkSequencerUnique)},
	{CheckTTL, []string{"S18", "S21"}, "no TTL invalidation earlier than TTL after the last create, renew or leader change, on the invalidating leader's clock",
		SeededRun, seeded(checkTTLLowerBound)},
	{CheckLockDelay, []string{"S22", "S49"}, "no other session acquires a key until the lock-delay an invalidation armed has passed on the accepting leader's clock",
		SeededRun, seeded(checkLockDelay)},
	{CheckBehaviour, []string{"S15", "S16", "S17"}, "an invalidation releases or deletes its session's keys atomically, as its behaviour says",
		SeededRun, seeded(checkBehaviour)},
	{CheckDurable, []string{"S37"}, "no acknowledged write is lost across crashes and leader changes",
		SeededRun, seeded(checkDurable)},
	{CheckStopsOnSync, []string{"S37"}, "a server whose disk fails an fsync stops itself within 5 s, rather than go on with a log it cannot make durable",
		SeededRun, seeded(checkStopsOnFailedSync)},
	{CheckRejoins, []string{"S37"}, "a server restarted after a power loss applies a new entry within an election and the slack",
		SeededRun, seeded(checkRejoinsAfterPowerLoss)},
	{CheckHealthyLinks, []string{"S53"}, "gossip marks a server or a live holder's client agent failed only while (or just after) links in the pool are faulty",
		SeededRun, seeded(checkNoFailureOnHealthyLinks)},
	{CheckFalseDeadFenced, []string{"S43", "S53", "S56"}, "a holder whose live agent was declared failed, or any check bound to its session went critical, has every later fenced write rejected",
		SeededRun, seeded(checkFalseDeadFenced)},
	{CheckDeadHolder, []string{"S12", "S53"}, "a killed (or long-paused) holder's serfHealth-bound session is invalidated within Bounds.DeadAgent",
		SeededRun, seeded(checkDeadHolderInvalidated)},
	{CheckQueryBound, []string{"S58", "S15"}, "no applied entry leaves a prepared query bound to a session that no longer exists: the invalidation deletes it in the same entry",
		SeededRun, seeded(checkQueryBound)},
	{CheckAgentExpiry, []string{"S12", "S56"}, "a session bound to an agent TTL check its client stopped passing is invalidated within the check's TTL plus Bounds' anti-entropy, election and slack",
		SeededRun, seeded(checkAgentCheckExpiry)},
	{CheckAgentRecord, []string{"S63", "S62"}, "once an agent's node record is in a server's state, no later entry drops its meta while the node stays in the catalog",
		SeededRun, seeded(checkAgentRecord)},
	{CheckAgentWritten, []string{"S63"}, "every client agent's node record is in the most advanced server's final state once nothing blocked the agent for Bounds' election, anti-entropy retry and slack",
		SeededRun, seeded(checkAgentRecordWritten)},
	{CheckLiveness, []string{"S14", "S19", "S21", "S10", "S12"}, "once faults heal, dead owners' sessions go and free keys can be acquired, within Bounds",
		SeededRun, seeded(checkLiveness)},
	{CheckRecipeExclusive, []string{"S49", "S50"}, "the fenced resource never serves two leaders at once",
		electionRun, func(in checkInput) []Violation { return CheckExclusive(ResourceWrites(in.recipe, core.ResFenced), 1) }},
	{CheckRecipeFenceKV, []string{"S43", "S50"}, "a recipe.Fence write lands only at an index where its sequencer holds the key",
		electionRun, seeded(checkFenceKV)},
	{CheckSemaphoreLimit, []string{"S51"}, "at every applied index at most Limit sessions are listed in .lock and hold their contender key",
		semaphoreRun, func(in checkInput) []Violation { return checkSemaphoreStates(in.ix, in.recipe.Config.Limit) }},
	{CheckRecipeExclusive, []string{"S51"}, "the verified resource never serves more than Limit holders at once",
		semaphoreRun, func(in checkInput) []Violation {
			return CheckExclusive(ResourceWrites(in.recipe, recipes.SemVerified), in.recipe.Config.Limit)
		}},
	{CheckSemaphoreValid, []string{"S51"}, "every request the verified resource accepted came from a live holder at some instant of its verification",
		semaphoreRun, func(in checkInput) []Violation { return checkSemaphoreValid(in.recipe, in.ix) }},
	{CheckRecipeTakeover, []string{"S19", "S21", "S22", "S49"}, "after a holder dies, a new holder is in place within RecipeBounds",
		electionRun | semaphoreRun, func(in checkInput) []Violation { vs, _ := takeovers(in.recipe, in.ix); return vs }},
}

// seeded adapts a check that reads the trace alone.
func seeded(fn func(ix *traceIndex) []Violation) func(checkInput) []Violation {
	return func(in checkInput) []Violation { return fn(in.ix) }
}

// checksFor lists the registry's checks of one kind of run, in table order.
func ChecksFor(kind runKind) []check {
	var out []check
	for _, c := range registry {
		if c.runs&kind != 0 {
			out = append(out, c)
		}
	}
	return out
}

// runChecks runs every check of kind over in.
func runChecks(kind runKind, in checkInput) []Violation {
	var out []Violation
	for _, c := range ChecksFor(kind) {
		out = append(out, c.apply(in)...)
	}
	return out
}

// RunChecks runs every property check of a seeded run over events.
func RunChecks(events []core.Event) []Violation {
	return runChecks(SeededRun, checkInput{ix: NewIndex(events)})
}

// RunCheck runs the named check of a seeded run alone (for tests and
// offline re-checks).
func RunCheck(name string, events []core.Event) ([]Violation, error) {
	for _, c := range ChecksFor(SeededRun) {
		if c.Name == name {
			return c.apply(checkInput{ix: NewIndex(events)}), nil
		}
	}
	return nil, fmt.Errorf("unknown check %q", name)
}

// CheckRecipeRun runs every check of r's recipe over a finished run.
func CheckRecipeRun(r *recipes.RecipeResult) []Violation {
	kind := electionRun
	if r.Config.Recipe == recipes.RecipeSemaphore {
		kind = semaphoreRun
	}
	return runChecks(kind, checkInput{ix: NewIndex(r.Events), recipe: r})
}

func (c check) apply(in checkInput) []Violation {
	vs := c.fn(in)
	for i := range vs {
		vs[i].Check, vs[i].Clauses = c.Name, c.clauses
	}
	return vs
}
