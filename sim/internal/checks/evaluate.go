package checks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"

	"github.com/tenurekv/tenure/linearizability"
)

// Evaluation is every check's verdict on one run.
type Evaluation struct {
	Violations []Violation
	Lin        linearizability.Report
	LinErr     error
	// Excused counts lock-delay refusals left out of the history because
	// only a server's late arming explains them (latedelay.go).
	Excused int
	// LinTimeout is the linearizability check's budget; the artifacts'
	// re-run for the visualisation gets the same.
	LinTimeout time.Duration
	// Counts says how many observations each check judged, in registry
	// order, linearizability last (its operations).
	Counts []Count
}

// Evaluate runs the property checks and the linearizability check over a
// finished run. Call it outside the synctest bubble: porcupine's time budget
// is wall time.
func Evaluate(res *workload.Result, linTimeout time.Duration) Evaluation {
	ev := Evaluation{LinTimeout: linTimeout}
	ev.Violations, ev.Counts = RunChecksCounted(res.Events)
	h, excused := history(NewIndex(res.Events))
	ev.Excused = excused
	ev.Lin, ev.LinErr = linearizability.Check(h, linearizability.Options{Timeout: linTimeout})
	lin := Count{Check: CheckLinearizable, Unit: "operations in the history", N: ev.Lin.Ops}
	if ev.LinErr != nil {
		lin.Violations = 1
		ev.Violations = append(ev.Violations, Violation{Check: CheckLinearizable,
			Clauses: []string{"S10", "S15", "S16", "S17", "S26", "S31", "S40", "S44"}, Msg: ev.LinErr.Error()})
	}
	ev.Counts = append(ev.Counts, lin)
	return ev
}

// Caught reports the names of the checks that found something.
func (e Evaluation) Caught() []string {
	var out []string
	for _, v := range e.Violations {
		if !slices.Contains(out, v.Check) {
			out = append(out, v.Check)
		}
	}
	return out
}

// writeArtifacts writes a failed run's evidence to dir: the fault schedule,
// the full event trace (JSON lines, virtual timestamps), the violations, the
// linearizability history and, when linearizability failed, porcupine's
// HTML visualisation annotated with the faults.
func WriteArtifacts(dir string, res *workload.Result, ev Evaluation) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	sched, err := json.MarshalIndent(scheduleView(res.Header.Faults), "", " ")
	if err != nil {
		return fmt.Errorf("artifacts: schedule: %w", err)
	}
	var errs []error
	errs = append(errs, os.WriteFile(filepath.Join(dir, "schedule.json"), append(sched, '\n'), 0o644))
	f, err := os.Create(filepath.Join(dir, "trace.jsonl"))
	if err == nil {
		errs = append(errs, core.WriteJSONL(f, res.Events), f.Close())
	} else {
		errs = append(errs, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, digest %s, virtual %v\n", res.Config.Seed, res.Digest, res.Virtual)
	for _, v := range ev.Violations {
		fmt.Fprintln(&b, v)
	}
	errs = append(errs, os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(b.String()), 0o644))
	h := historyOf(res.Events)
	errs = append(errs, h.WriteFile(filepath.Join(dir, "history.json")))
	if !errors.Is(ev.LinErr, linearizability.ErrBadHistory) {
		// Re-run with an artifact folder for porcupine's HTML, annotated
		// with the faults, whichever check failed; the verdict is known,
		// so the re-run gets no more time than the check had (a minute if
		// unknown): a broken server's history can keep porcupine busy.
		budget := ev.LinTimeout
		if budget <= 0 {
			budget = time.Minute
		}
		_, _ = linearizability.Check(h, linearizability.Options{Timeout: budget, ArtifactDir: dir,
			Name: "linearizability", Visualize: true})
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("artifacts in %s: %w", dir, err)
	}
	return nil
}

// scheduledFault is a fault as schedule.json shows it to a reader: its
// times as durations ("12.9s"), from when the workload started, as the
// schedule sets them.
type scheduledFault struct {
	ID    int            `json:"id"`
	Kind  core.FaultKind `json:"kind"`
	At    string         `json:"at"`
	Dur   string         `json:"dur"`
	Pick  uint64         `json:"pick"`
	Param string         `json:"param,omitempty"`
	Rate  float64        `json:"rate,omitempty"`
}

func scheduleView(faults []core.Fault) []scheduledFault {
	out := make([]scheduledFault, 0, len(faults))
	for _, f := range faults {
		v := scheduledFault{ID: f.ID, Kind: f.Kind, At: f.At.Round(time.Millisecond).String(),
			Dur: f.Dur.Round(time.Millisecond).String(), Pick: f.Pick, Rate: f.Rate}
		if f.Param != 0 {
			v.Param = f.Param.Round(time.Millisecond).String()
		}
		out = append(out, v)
	}
	return out
}
