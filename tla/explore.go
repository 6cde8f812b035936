package tla

import (
	"fmt"

	"github.com/tenurekv/tenure/model"
)

// Options tune a run. The zero value explores the whole space with the real
// model and every check.
type Options struct {
	// Apply replaces model.State.Apply; tests use it to show that a broken
	// transition is caught. Nil means ModelApply.
	Apply ApplyFunc
	// SkipModelChecks leaves out model.CheckInvariants and
	// model.CheckTransition, to show that the TLA+ invariants alone catch a bug.
	SkipModelChecks bool
	// StopAtViolation ends the run after the BFS level in which the first
	// violation was found; otherwise a violation ends the run at once.
	// Either way the run reports the first violation found, whose depth is the
	// least possible.
	StopAtViolation bool
}

// Step is one state of a trace and the action that led to it (empty for
// the initial state).
type Step struct {
	Action Action
	State  *Abs
}

// Violation is a failed check with the shortest trace to it.
type Violation struct {
	Check string // invariant, property, or model check name
	Err   error
	Trace []Step
}

func (v *Violation) Error() string {
	return fmt.Sprintf("%s violated after %d steps: %v", v.Check, len(v.Trace)-1, v.Err)
}

// Report is the outcome of a run.
type Report struct {
	Distinct    int   // distinct abstract states reached (TLC's "distinct states found")
	Levels      []int // new distinct states per BFS depth; Levels[0] = 1
	Transitions int   // enabled action instances taken, self-loops included
	Violation   *Violation
}

// node is a reached distinct state, with the way it was first reached.
type node struct {
	w      *world // nil once expanded, to free the model state
	abs    *Abs
	parent *node
	via    Action
}

func (n *node) trace() []Step {
	var rev []Step
	for x := n; x != nil; x = x.parent {
		rev = append(rev, Step{Action: x.via, State: x.abs})
	}
	out := make([]Step, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}

// Explore walks the config's state space breadth first.
func Explore(cfg Config, opts Options) (*Report, error) {
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
	cfg   Config
	sc    *Scenario
	rules *rules
	opts  Options
	invs  []string
	props []string
}

func newExplorer(cfg Config, sc *Scenario, opts Options) (*explorer, error) {
	ap := opts.Apply
	if ap == nil {
		ap = ModelApply
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
func (x *explorer) checkState(w *world, a *Abs) (string, error) {
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
func (x *explorer) checkStep(prev, next *world, pa, na *Abs, res *model.Result) (string, error) {
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

func (x *explorer) run() *Report {
	rep := &Report{}
	w0, err := x.initial()
	if err != nil {
		rep.Violation = &Violation{Check: "Init", Err: err}
		return rep
	}
	root := &node{w: w0, abs: w0.abs()}
	seen := map[string]bool{root.abs.Key(): true}
	rep.Distinct, rep.Levels = 1, []int{1}
	if name, err := x.checkState(w0, root.abs); err != nil {
		rep.Violation = &Violation{Check: name, Err: err, Trace: root.trace()}
		return rep
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
					if name, err := x.checkStep(n.w, w, n.abs, a, res); err != nil && rep.Violation == nil {
						child := &node{abs: a, parent: n, via: def.action(x.sc, args)}
						rep.Violation = &Violation{Check: name, Err: err, Trace: child.trace()}
					}
					key := a.Key()
					if seen[key] {
						return
					}
					seen[key] = true
					child := &node{w: w, abs: a, parent: n, via: def.action(x.sc, args)}
					next = append(next, child)
					if name, err := x.checkState(w, a); err != nil && rep.Violation == nil {
						rep.Violation = &Violation{Check: name, Err: err, Trace: child.trace()}
					}
				})
			}
			n.w = nil
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
