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
	CheckACLEnforced     = "acl-enforced"
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
	// unit names what one observation of the check is, as a count of them
	// prints it ("412 accepted fenced writes"): each check counts what it
	// judged (traceIndex.judge), so that a property no run exercised shows
	// as 0 rather than as a pass.
	unit string
	runs runKind
	fn   func(in checkInput) []Violation
}

// registry is where every property the simulator checks is defined: its
// name, the SPEC clauses it checks, what it checks, the runs it applies to
// and its function (each function's comment says how). Linearizability is
// the one check outside it: it needs the porcupine models and a time budget
// (evaluate.go, linearize.go). Each check's teeth tests (known-bad input
// that it must fail) are in checks_test.go, recipes_checks_test.go and
// variants_test.go.
var registry = []check{
	{CheckFenced, []string{"S40", "S43", "S50"}, "the fenced resource never accepts a stale sequencer", "accepted fenced writes",
		SeededRun | electionRun, seeded(checkFenced)},
	{CheckSequencer, []string{"S33", "S41", "S52"}, "a (key, LockIndex) names one session, and a key's LockIndex never goes down while it exists", "sequencers issued",
		SeededRun | electionRun, seeded(checkSequencerUnique)},
	{CheckTTL, []string{"S18", "S21"}, "no TTL invalidation earlier than TTL after the last create, renew or leader change, on the invalidating leader's clock", "TTL invalidations",
		SeededRun, seeded(checkTTLLowerBound)},
	{CheckLockDelay, []string{"S22", "S49"}, "no other session acquires a key until the lock-delay an invalidation armed has passed on the accepting leader's clock", "acquires after an armed lock-delay",
		SeededRun, seeded(checkLockDelay)},
	{CheckBehaviour, []string{"S15", "S16", "S17"}, "an invalidation releases or deletes its session's keys atomically, as its behaviour says", "invalidated holders' keys",
		SeededRun, seeded(checkBehaviour)},
	{CheckDurable, []string{"S37"}, "no acknowledged write is lost across crashes and leader changes", "acknowledged last writes read back",
		SeededRun, seeded(checkDurable)},
	{CheckStopsOnSync, []string{"S37"}, "a server whose disk fails an fsync stops itself within 5 s, rather than go on with a log it cannot make durable", "failed fsyncs",
		SeededRun, seeded(checkStopsOnFailedSync)},
	{CheckRejoins, []string{"S37"}, "a server restarted after a power loss applies a new entry within an election and the slack", "restarts after a power loss",
		SeededRun, seeded(checkRejoinsAfterPowerLoss)},
	{CheckHealthyLinks, []string{"S53"}, "gossip marks a server or a live holder's client agent failed only while (or just after) links in the pool are faulty", "serfHealth changes to critical",
		SeededRun, seeded(checkNoFailureOnHealthyLinks)},
	{CheckFalseDeadFenced, []string{"S43", "S53", "S56"}, "a holder whose live agent was declared failed, or any check bound to its session went critical, has every later fenced write rejected", "fenced writes after a false death",
		SeededRun, seeded(checkFalseDeadFenced)},
	{CheckDeadHolder, []string{"S12", "S53"}, "a killed (or long-paused) holder's serfHealth-bound session is invalidated within Bounds.DeadAgent", "sessions of stopped holders",
		SeededRun, seeded(checkDeadHolderInvalidated)},
	{CheckQueryBound, []string{"S58", "S15"}, "no applied entry leaves a prepared query bound to a session that no longer exists: the invalidation deletes it in the same entry", "queries bound to a session that went",
		SeededRun, seeded(checkQueryBound)},
	{CheckAgentExpiry, []string{"S12", "S56"}, "a session bound to an agent TTL check its client stopped passing is invalidated within the check's TTL plus Bounds' anti-entropy, election and slack", "sessions of lapsed agent checks",
		SeededRun, seeded(checkAgentCheckExpiry)},
	{CheckAgentRecord, []string{"S63", "S62"}, "once an agent's node record is in a server's state, no later entry drops its meta while the node stays in the catalog", "node meta changes",
		SeededRun, seeded(checkAgentRecord)},
	{CheckAgentWritten, []string{"S63"}, "every client agent's node record is in the most advanced server's final state once nothing blocked the agent for Bounds' election, anti-entropy retry and slack", "agents due a record",
		SeededRun, seeded(checkAgentRecordWritten)},
	{CheckACLEnforced, []string{"S84", "S85"}, "with ACLs on, no request is applied, no acquire takes effect and no read returns a key that its token, decided again by package acl over the run's ACL tables, did not allow", "applied requests and acquires of ACL runs",
		SeededRun, seeded(checkACLEnforced)},
	{CheckLiveness, []string{"S14", "S19", "S21", "S10", "S12"}, "once faults heal, dead owners' sessions go and free keys can be acquired, within Bounds", "sessions and keys due after the heal",
		SeededRun, seeded(checkLiveness)},
	{CheckRecipeExclusive, []string{"S49", "S50"}, "the fenced resource never serves two leaders at once", "accepted writes",
		electionRun, func(in checkInput) []Violation {
			ws := ResourceWrites(in.recipe, core.ResFenced)
			in.ix.judge(len(ws))
			return CheckExclusive(ws, 1)
		}},
	{CheckRecipeFenceKV, []string{"S43", "S50"}, "a recipe.Fence write lands only at an index where its sequencer holds the key", "fenced writes landed",
		electionRun, seeded(checkFenceKV)},
	{CheckSemaphoreLimit, []string{"S51"}, "at every applied index at most Limit sessions are listed in .lock and hold their contender key", "semaphore states",
		semaphoreRun, func(in checkInput) []Violation { return checkSemaphoreStates(in.ix, in.recipe.Config.Limit) }},
	{CheckRecipeExclusive, []string{"S51"}, "the verified resource never serves more than Limit holders at once", "accepted writes",
		semaphoreRun, func(in checkInput) []Violation {
			ws := ResourceWrites(in.recipe, recipes.SemVerified)
			in.ix.judge(len(ws))
			return CheckExclusive(ws, in.recipe.Config.Limit)
		}},
	{CheckSemaphoreValid, []string{"S51"}, "every request the verified resource accepted came from a live holder at some instant of its verification", "accepted verified requests",
		semaphoreRun, func(in checkInput) []Violation { return checkSemaphoreValid(in.recipe, in.ix) }},
	{CheckRecipeTakeover, []string{"S19", "S21", "S22", "S49"}, "after a holder dies, a new holder is in place within RecipeBounds", "holder deaths needing a takeover",
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

// Count is how many observations one check judged in a run, and how many
// violations it found among them.
type Count struct {
	Check      string `json:"check"`
	Unit       string `json:"unit"`
	N          int    `json:"n"`
	Violations int    `json:"violations"`
}

func (c Count) String() string {
	s := fmt.Sprintf("%s %d %s", c.Check, c.N, c.Unit)
	if c.N == 0 {
		s += " (not exercised)"
	}
	switch {
	case c.Violations == 1:
		s += ", 1 violation"
	case c.Violations > 1:
		s += fmt.Sprintf(", %d violations", c.Violations)
	}
	return s
}

// runChecks runs every check of kind over in, with each check's count.
func runChecks(kind runKind, in checkInput) ([]Violation, []Count) {
	var out []Violation
	var counts []Count
	for _, c := range ChecksFor(kind) {
		vs, n := c.apply(in)
		out = append(out, vs...)
		counts = append(counts, Count{Check: c.Name, Unit: c.unit, N: n, Violations: len(vs)})
	}
	return out, counts
}

// RunChecks runs every property check of a seeded run over events.
func RunChecks(events []core.Event) []Violation {
	vs, _ := RunChecksCounted(events)
	return vs
}

// RunChecksCounted is RunChecks with how many observations each check
// judged, in registry order.
func RunChecksCounted(events []core.Event) ([]Violation, []Count) {
	return runChecks(SeededRun, checkInput{ix: NewIndex(events)})
}

// RunCheck runs the named check of a seeded run alone (for tests and
// offline re-checks).
func RunCheck(name string, events []core.Event) ([]Violation, error) {
	vs, _, err := RunCheckCounted(name, events)
	return vs, err
}

// RunCheckCounted is RunCheck with the number of observations it judged.
func RunCheckCounted(name string, events []core.Event) ([]Violation, int, error) {
	for _, c := range ChecksFor(SeededRun) {
		if c.Name == name {
			vs, n := c.apply(checkInput{ix: NewIndex(events)})
			return vs, n, nil
		}
	}
	return nil, 0, fmt.Errorf("unknown check %q", name)
}

// CheckRecipeRun runs every check of r's recipe over a finished run.
func CheckRecipeRun(r *recipes.RecipeResult) []Violation {
	vs, _ := CheckRecipeRunCounted(r)
	return vs
}

// CheckRecipeRunCounted is CheckRecipeRun with each check's count.
func CheckRecipeRunCounted(r *recipes.RecipeResult) ([]Violation, []Count) {
	kind := electionRun
	if r.Config.Recipe == recipes.RecipeSemaphore {
		kind = semaphoreRun
	}
	return runChecks(kind, checkInput{ix: NewIndex(r.Events), recipe: r})
}

// apply runs c and returns its violations, named, and how many
// observations it judged. The counter lives on the shared index, so
// checks run one at a time.
func (c check) apply(in checkInput) ([]Violation, int) {
	in.ix.judged = 0
	vs := c.fn(in)
	for i := range vs {
		vs[i].Check, vs[i].Clauses = c.Name, c.clauses
	}
	return vs, in.ix.judged
}
