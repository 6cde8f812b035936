package tla

import (
	"fmt"
	"slices"

	"github.com/tenurekv/tenure/model"
)

// options tune a run. The zero value explores the whole space with the real
// model and every check.
type options struct {
	// Apply replaces model.State.Apply; tests use it to show that a broken
	// transition is caught. Nil means modelApply.
	Apply applyFunc
	// SkipModelChecks leaves out model.CheckInvariants and
	// model.CheckTransition, to show that the TLA+ invariants alone catch a bug.
	SkipModelChecks bool
	// StopAtViolation ends the run after the BFS level in which the first
	// violation was found; otherwise a violation ends the run at once.
	// Either way the run reports the first violation found, whose depth is the
	// least possible.
	StopAtViolation bool
}

// traceStep is one state of a trace and the action that led to it (empty for
// the initial state).
type traceStep struct {
	Action action
	State  *abs
}

// violation is a failed check with the shortest trace to it.
type violation struct {
	Check string // invariant, property, or model check name
	Err   error
	Trace []traceStep
}

func (v *violation) Error() string {
	return fmt.Sprintf("%s violated after %d steps: %v", v.Check, len(v.Trace)-1, v.Err)
}

// report is the outcome of a run.
type report struct {
	Distinct    int   // distinct abstract states reached (TLC's "distinct states found")
	Levels      []int // new distinct states per BFS depth; Levels[0] = 1
	Transitions int   // enabled action instances taken, self-loops included
	Violation   *violation
}

// node is a reached distinct state. Only the frontier keeps its world and
// projection; a trace is rebuilt by replaying the actions from the root.
type node struct {
	w      *world
	abs    *abs
	parent *node
	def    int8    // index into actions; -1 for the root
	args   [2]int8 // parameter indexes of the action (at most two)
}

// path lists the action instances from the root to n.
func (n *node) path() []*node {
	var rev []*node
	for x := n; x.parent != nil; x = x.parent {
		rev = append(rev, x)
	}
	slices.Reverse(rev)
	return rev
}

// explore walks the config's state space breadth first.
func explore(cfg config, opts options) (*report, error) {
	sc, ok := scenarios[cfg.Scenario]
	if !ok {
		return nil, fmt.Errorf("explore %s: unknown scenario %q", cfg.Name, cfg.Scenario)
	}
	x, err := newExplorer(cfg, &sc, opts)
	if err != nil {
		return nil, fmt.Errorf("explore %s: %w", cfg.Name, err)
	}
	return x.run(), nil
}

type explorer struct {
	cfg   config
	sc    *scenario
	rules *rules
	opts  options
	invs  []string
	props []string
}

func newExplorer(cfg config, sc *scenario, opts options) (*explorer, error) {
	ap := opts.Apply
	if ap == nil {
		ap = modelApply
	}
	// node stores an action instance in two int8s.
	for _, def := range actions {
		if len(def.params) > len(node{}.args) {
			return nil, fmt.Errorf("action %s has %d parameters; nodes hold %d", def.name, len(def.params), len(node{}.args))
		}
		for _, p := range def.params {
			if n := len(domainNames(sc, p.domain)); n > 127 {
				return nil, fmt.Errorf("domain %s has %d values; nodes hold 127", p.domain, n)
			}
		}
	}
	for _, name := range cfg.Invariants {
		if invariants[name] == nil {
			return nil, fmt.Errorf("invariant %s has no Go counterpart", name)
		}
	}
	for _, name := range cfg.Properties {
		if properties[name] == nil {
			return nil, fmt.Errorf("property %s has no Go counterpart", name)
		}
	}
	return &explorer{
		cfg: cfg, sc: sc, opts: opts,
		rules: &rules{apply: ap, maxIndex: uint64(cfg.MaxIndex)},
		invs:  cfg.Invariants, props: cfg.Properties,
	}, nil
}

// initial is Init: the catalog registered, nothing else.
func (x *explorer) initial() (*world, error) { return newWorld(x.sc) }

// checkState runs the state checks on a newly reached state.
func (x *explorer) checkState(w *world, a *abs) (string, error) {
	for _, name := range x.invs {
		if err := invariants[name](a, x.rules.maxIndex); err != nil {
			return name, err
		}
	}
	if !x.opts.SkipModelChecks {
		if err := w.m.CheckInvariants(); err != nil {
			return "model.CheckInvariants", err
		}
	}
	return "", nil
}

// checkStep runs the step checks on prev → next.
func (x *explorer) checkStep(prev, next *world, pa, na *abs, res *model.Result) (string, error) {
	for _, name := range x.props {
		if err := properties[name](pa, na); err != nil {
			return name, err
		}
	}
	if res != nil && !x.opts.SkipModelChecks {
		if err := model.CheckTransition(prev.m, next.m, *res); err != nil {
			return "model.CheckTransition", err
		}
	}
	return "", nil
}

// trace replays n's path from Init and returns every state on it, ending
// with last (the state the failing check saw, which may not be stored).
func (x *explorer) trace(n *node, lastDef int, lastArgs []int, last *abs) []traceStep {
	w, err := x.initial()
	if err != nil {
		return nil
	}
	a := w.abs()
	steps := []traceStep{{State: a}}
	for _, p := range n.path() {
		def := &actions[p.def]
		args := p.argSlice(len(def.params))
		nw, _, ok := def.run(x.rules, w, a, args)
		if !ok {
			// Deterministic transitions make this unreachable; keep what we have.
			return steps
		}
		w, a = nw, nw.abs()
		steps = append(steps, traceStep{Action: def.action(x.sc, args), State: a})
	}
	if last != nil {
		steps = append(steps, traceStep{Action: actions[lastDef].action(x.sc, lastArgs), State: last})
	}
	return steps
}

func (n *node) argSlice(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = int(n.args[i])
	}
	return out
}

func (x *explorer) run() *report {
	rep := &report{}
	w0, err := x.initial()
	if err != nil {
		rep.Violation = &violation{Check: "Init", Err: err}
		return rep
	}
	root := &node{w: w0, abs: w0.abs(), def: -1}
	seen := map[string]bool{root.abs.Key(): true}
	rep.Distinct, rep.Levels = 1, []int{1}
	if name, err := x.checkState(w0, root.abs); err != nil {
		rep.Violation = &violation{Check: name, Err: err, Trace: x.trace(root, 0, nil, nil)}
		return rep
	}
	fail := func(n *node, def int, args []int, a *abs, name string, err error) {
		if rep.Violation == nil {
			rep.Violation = &violation{Check: name, Err: err, Trace: x.trace(n, def, args, a)}
		}
	}
	level := []*node{root}
	for len(level) > 0 {
		var next []*node
		for _, n := range level {
			for i := range actions {
				def := &actions[i]
				def.instances(x.sc, func(args []int) {
					if rep.Violation != nil && !x.opts.StopAtViolation {
						return
					}
					w, res, ok := def.run(x.rules, n.w, n.abs, args)
					if !ok {
						return
					}
					rep.Transitions++
					a := w.abs()
					if name, err := x.checkStep(n.w, w, n.abs, a, res); err != nil {
						fail(n, i, args, a, name, err)
					}
					key := a.Key()
					if seen[key] {
						return
					}
					seen[key] = true
					child := &node{w: w, abs: a, parent: n, def: int8(i)}
					for j, v := range args {
						child.args[j] = int8(v)
					}
					next = append(next, child)
					if name, err := x.checkState(w, a); err != nil {
						fail(n, i, args, a, name, err)
					}
				})
			}
			n.w, n.abs = nil, nil
			if rep.Violation != nil && !x.opts.StopAtViolation {
				break
			}
		}
		if len(next) > 0 {
			rep.Distinct += len(next)
			rep.Levels = append(rep.Levels, len(next))
		}
		if rep.Violation != nil {
			break
		}
		level = next
	}
	return rep
}
