package tla

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
)

// trace is a TLC counterexample as written by "-dumpTrace json": the states
// (variable name to value) and the action taken between each pair.
type trace struct {
	States  []map[string]any
	Actions []action
}

// tlcTrace is the file layout: {"counterexample": {"state": [[i, {...}], ...],
// "action": [[[i, {...}], {"name": ..., "context": {...}}, [i+1, {...}]], ...]}}.
type tlcTrace struct {
	Counterexample struct {
		State  []json.RawMessage   `json:"state"`
		Action [][]json.RawMessage `json:"action"`
	} `json:"counterexample"`
}

type tlcAction struct {
	Name    string            `json:"name"`
	Context map[string]string `json:"context"`
}

// loadTrace reads a TLC JSON counterexample.
func loadTrace(path string) (*trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load trace: %w", err)
	}
	tr, err := parseTrace(data)
	if err != nil {
		return nil, fmt.Errorf("load trace %s: %w", path, err)
	}
	return tr, nil
}

// parseTrace decodes a TLC JSON counterexample and checks that its actions
// link its states in order.
func parseTrace(data []byte) (*trace, error) {
	var raw tlcTrace
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode trace: %w", err)
	}
	ce := raw.Counterexample
	if len(ce.State) == 0 {
		return nil, fmt.Errorf("trace has no states")
	}
	if len(ce.Action) != len(ce.State)-1 {
		return nil, fmt.Errorf("trace has %d states but %d actions", len(ce.State), len(ce.Action))
	}
	tr := &trace{}
	for i, st := range ce.State {
		num, vars, err := decodeNumbered(st)
		if err != nil {
			return nil, fmt.Errorf("state %d: %w", i+1, err)
		}
		if num != i+1 {
			return nil, fmt.Errorf("state %d is numbered %d", i+1, num)
		}
		tr.States = append(tr.States, vars)
	}
	for i, a := range ce.Action {
		if len(a) != 3 {
			return nil, fmt.Errorf("action %d: want [from, action, to], got %d parts", i+1, len(a))
		}
		from, _, err := decodeNumbered(a[0])
		if err != nil {
			return nil, fmt.Errorf("action %d source: %w", i+1, err)
		}
		to, _, err := decodeNumbered(a[2])
		if err != nil {
			return nil, fmt.Errorf("action %d target: %w", i+1, err)
		}
		if from != i+1 || to != i+2 {
			return nil, fmt.Errorf("action %d links states %d and %d", i+1, from, to)
		}
		var act tlcAction
		if err := json.Unmarshal(a[1], &act); err != nil {
			return nil, fmt.Errorf("action %d: %w", i+1, err)
		}
		if act.Name == "" {
			return nil, fmt.Errorf("action %d has no name", i+1)
		}
		if act.Context == nil {
			act.Context = map[string]string{}
		}
		tr.Actions = append(tr.Actions, action{Name: act.Name, Args: act.Context})
	}
	return tr, nil
}

// decodeNumbered decodes TLC's [number, {variables}] pair.
func decodeNumbered(raw json.RawMessage) (int, map[string]any, error) {
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil {
		return 0, nil, fmt.Errorf("want [number, state]: %w", err)
	}
	if len(pair) != 2 {
		return 0, nil, fmt.Errorf("want [number, state], got %d parts", len(pair))
	}
	var num int
	if err := json.Unmarshal(pair[0], &num); err != nil {
		return 0, nil, fmt.Errorf("state number: %w", err)
	}
	var vars map[string]any
	if err := json.Unmarshal(pair[1], &vars); err != nil {
		return 0, nil, fmt.Errorf("state: %w", err)
	}
	return num, vars, nil
}

// replay runs the trace's actions through the explorer's transitions from
// Init and checks that every state reached equals TLC's. It returns the Go
// states, the initial one first.
func replay(cfg config, tr *trace, opts options) ([]*abs, error) {
	sc, ok := scenarios[cfg.Scenario]
	if !ok {
		return nil, fmt.Errorf("replay %s: unknown scenario %q", cfg.Name, cfg.Scenario)
	}
	x, err := newExplorer(cfg, &sc, opts)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", cfg.Name, err)
	}
	w, err := x.initial()
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", cfg.Name, err)
	}
	a := w.abs()
	if err := sameState(a, tr.States[0]); err != nil {
		return nil, fmt.Errorf("replay %s: initial state: %w", cfg.Name, err)
	}
	out := []*abs{a}
	for i, act := range tr.Actions {
		def, args, err := bind(&sc, act)
		if err != nil {
			return out, fmt.Errorf("replay %s: step %d: %w", cfg.Name, i+1, err)
		}
		nw, _, ok := def.run(x.rules, w, a, args)
		if !ok {
			return out, fmt.Errorf("replay %s: step %d: %v is not enabled in Go", cfg.Name, i+1, act)
		}
		na := nw.abs()
		if err := sameState(na, tr.States[i+1]); err != nil {
			return out, fmt.Errorf("replay %s: step %d (%v): %w", cfg.Name, i+1, act, err)
		}
		w, a = nw, na
		out = append(out, a)
	}
	return out, nil
}

// bind finds the Go action of a trace step and its argument indexes.
func bind(sc *scenario, act action) (*actionDef, []int, error) {
	i := slices.IndexFunc(actions, func(d actionDef) bool { return d.name == act.Name })
	if i < 0 {
		return nil, nil, fmt.Errorf("action %s has no Go counterpart", act.Name)
	}
	def := &actions[i]
	if len(act.Args) != len(def.params) {
		return nil, nil, fmt.Errorf("action %v: want parameters %v", act, def.params)
	}
	args := make([]int, len(def.params))
	for j, p := range def.params {
		v, ok := act.Args[p.name]
		if !ok {
			return nil, nil, fmt.Errorf("action %v lacks parameter %s", act, p.name)
		}
		args[j] = slices.Index(domainNames(sc, p.domain), v)
		if args[j] < 0 {
			return nil, nil, fmt.Errorf("action %v: %q is not in %s", act, v, p.domain)
		}
	}
	return def, args, nil
}

// sameState compares a Go state with a TLC one, variable by variable.
func sameState(a *abs, tlc map[string]any) error {
	goState, err := normalJSON(a.TLA())
	if err != nil {
		return err
	}
	g := goState.(map[string]any)
	want, err := normalJSON(tlc)
	if err != nil {
		return err
	}
	t := want.(map[string]any)
	for name := range t {
		if _, ok := g[name]; !ok {
			return fmt.Errorf("TLC variable %s is not in the Go state", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g)) {
		if !reflect.DeepEqual(g[name], t[name]) {
			return fmt.Errorf("variable %s: Go %v, TLC %v", name, g[name], t[name])
		}
	}
	return nil
}
