package sim

import (
	"errors"
	"fmt"
	"testing"
)

// Shrunk is a failure reduced: a smallest schedule and set of processes
// found that still breaks the same property.
type Shrunk struct {
	// Property is the one kept broken: the failed run's first violation's.
	Property string
	// From and FromProcesses are the failed run's schedule and processes;
	// Schedule and Processes the smallest found.
	From, Schedule           []Fault
	FromProcesses, Processes []string
	// Candidates is how many candidates were tried, each run Runs times.
	Candidates, Runs int
	// Result is a run of the smallest schedule and processes.
	Result *Result
}

// Shrink reduces a failed run by delta debugging: first its fault
// schedule (each fault kept whole: its time, length and target pick), then
// its processes, to a smallest set that still breaks the run's first
// broken property in every one of Options.ShrinkRuns reruns. setup must be
// the one the run was made with. The reruns run at GOMAXPROCS=1, where a
// seed replays; Shrink restores the setting when it returns.
func Shrink(t *testing.T, failed *Result, setup func(*Cluster)) (s *Shrunk, err error) {
	t.Helper()
	onOneProc(func() { s, err = shrink(t, failed, setup) })
	return s, err
}

func shrink(t *testing.T, failed *Result, setup func(*Cluster)) (*Shrunk, error) {
	t.Helper()
	if !failed.Failed() {
		return nil, errors.New("sim: shrink: the run did not fail")
	}
	prop := failed.Violations[0].Property
	base := failed.Options
	var runErr error
	fails := func(o Options) bool {
		for range o.ShrinkRuns {
			out, err := inBubble(t, o, setup)
			if err != nil {
				runErr = err
				return false
			}
			if !evaluate(o, out).Broke(prop) {
				return false
			}
		}
		return true
	}
	s := &Shrunk{Property: prop, From: base.Schedule, FromProcesses: base.Processes, Runs: base.ShrinkRuns}
	var n int
	s.Schedule, n = ddmin(base.Schedule, func(c []Fault) bool {
		o := base
		o.Schedule = c
		return fails(o)
	})
	s.Candidates += n
	base.Schedule = s.Schedule
	s.Processes, n = ddmin(base.Processes, func(c []string) bool {
		if len(c) == 0 {
			return false // a run needs a process
		}
		o := base
		o.Processes = c
		return fails(o)
	})
	s.Candidates += n
	base.Processes = s.Processes
	if runErr != nil {
		return nil, fmt.Errorf("sim: shrink: a candidate could not run: %w", runErr)
	}
	out, err := inBubble(t, base, setup)
	if err != nil {
		return nil, fmt.Errorf("sim: shrink: %w", err)
	}
	s.Result = evaluate(base, out)
	if !s.Result.Broke(prop) {
		return s, fmt.Errorf("sim: shrink: the smallest run found did not break %s when run once more (the seed does not replay reliably; raise ShrinkRuns)", prop)
	}
	return s, nil
}
