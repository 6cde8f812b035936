package tla

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// nextAction is one disjunct of Sessions.tla's Next: an action and the
// bound variables it is applied to.
type nextAction struct {
	Name   string
	Params []param
}

var (
	disjunctRE = regexp.MustCompile(`^\\/\s*(?:\\E\s+(.+?)\s*:\s*)?([A-Za-z][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*$`)
	binderRE   = regexp.MustCompile(`^([a-z][A-Za-z0-9_]*)\s+\\in\s+([A-Za-z][A-Za-z0-9_]*)$`)
	defRE      = regexp.MustCompile(`(?m)^([A-Za-z][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==`)
)

// parseNext reads the disjuncts of "Next ==" in a module's text. It accepts
// only the shape Sessions.tla uses, one disjunct per line:
//
//	\/ \E c \in Clients, k \in Keys : Acquire(c, k)
//	\/ Tick
func parseNext(text string) ([]nextAction, error) {
	lines := strings.Split(text, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "Next ==" })
	if start < 0 {
		return nil, fmt.Errorf(`no line "Next ==" found`)
	}
	var out []nextAction
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" {
			break
		}
		m := disjunctRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d %q: not a disjunct of the form \\/ [\\E x \\in S, ... :] Action[(x, ...)]", i+1, line)
		}
		act := nextAction{Name: m[2]}
		if m[1] != "" {
			for _, b := range strings.Split(m[1], ",") {
				bm := binderRE.FindStringSubmatch(strings.TrimSpace(b))
				if bm == nil {
					return nil, fmt.Errorf("line %d: bad binder %q", i+1, b)
				}
				act.Params = append(act.Params, param{name: bm[1], domain: bm[2]})
			}
		}
		var callArgs []string
		if strings.TrimSpace(m[3]) != "" {
			for _, a := range strings.Split(m[3], ",") {
				callArgs = append(callArgs, strings.TrimSpace(a))
			}
		}
		bound := make([]string, len(act.Params))
		for j, p := range act.Params {
			bound[j] = p.name
		}
		if !slices.Equal(callArgs, bound) {
			return nil, fmt.Errorf("line %d: %s is applied to %v but binds %v", i+1, act.Name, callArgs, bound)
		}
		out = append(out, act)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the Next definition has no disjuncts")
	}
	return out, nil
}

// matchActions checks that every action of Next has a Go counterpart with the
// same parameters over the same sets, and that every Go action is in Next.
func matchActions(next []nextAction) error {
	var problems []string
	for _, na := range next {
		i := slices.IndexFunc(actions, func(d actionDef) bool { return d.name == na.Name })
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("TLA+ action %s has no Go counterpart", na.Name))
		case !slices.Equal(actions[i].params, na.Params):
			problems = append(problems, fmt.Sprintf("%s: TLA+ parameters %v, Go %v", na.Name, na.Params, actions[i].params))
		}
	}
	for _, d := range actions {
		if !slices.ContainsFunc(next, func(na nextAction) bool { return na.Name == d.name }) {
			problems = append(problems, fmt.Sprintf("Go action %s is not in Next", d.name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("actions differ: %s", strings.Join(problems, "; "))
	}
	return nil
}

// definedOperators lists the operators a module's text defines at the start
// of a line ("Name ==" or "Name(args) ==").
func definedOperators(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range defRE.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// matchChecks checks that every Go invariant and property is an operator the
// spec defines.
func matchChecks(defined map[string]bool) error {
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(invariants)) {
		if !defined[name] {
			missing = append(missing, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(properties)) {
		if !defined[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("checks with no definition in the spec: %v", missing)
	}
	return nil
}
