package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/report"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// TenureProperties are tenure's own properties a run checks besides the
// user's invariants: those that read only what the servers applied (the
// harness does not see the processes' requests, so properties about a
// client's view, such as linearizability, are left to sim's own runs).
var TenureProperties = []string{checks.CheckSequencer, checks.CheckLockDelay, checks.CheckBehaviour, checks.CheckAgentRecord}

// Result is one run and what was checked over it.
type Result struct {
	// Options is what ran: defaults filled in, Schedule and Processes set.
	Options Options
	History History
	// Violations are the broken invariants and tenure properties, in the
	// order of Options.Invariants, then TenureProperties.
	Violations []Violation
	// Timeline is the faults as injected: when each started, whom it hit
	// and how long it lasted (seconds from the processes' start).
	Timeline string
	// Virtual is the run's length in virtual time, start-up included;
	// Digest a hash of its trace (equal digests: the same run).
	Virtual time.Duration
	Digest  string
	// ArtifactDir is where Check wrote the failed run's evidence.
	ArtifactDir string
	// Shrunk is a failure's smallest run found (Check, unless NoShrink).
	Shrunk *Shrunk

	hdr    core.RunHeader
	events []core.Event
	// t0 is when the processes started, in the trace's time: the history,
	// the schedule and Violation.At count from it, the trace from boot.
	t0 time.Duration
}

// Failed reports whether the run broke anything.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Broke reports whether the run broke the named property (an invariant's
// Name, or one of TenureProperties).
func (r *Result) Broke(property string) bool {
	return slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Property == property })
}

// first is the first violation of property (the zero Violation if none).
func (r *Result) first(property string) Violation {
	for _, v := range r.Violations {
		if v.Property == property {
			return v
		}
	}
	return Violation{}
}

// Simulate runs opts once, in a synctest bubble of its own, and checks the
// invariants and tenure's properties; it does not fail t, and returns an
// error only if the run could not be carried out (bad Options, a cluster
// that never came up). Call it from a test's goroutine, not inside a
// bubble. setup is called once, before the cluster boots.
func Simulate(t *testing.T, opts Options, setup func(*Cluster)) (*Result, error) {
	t.Helper()
	if path := os.Getenv(ScenarioEnv); path != "" {
		sc, err := ReadScenario(path)
		if err != nil {
			return nil, err
		}
		opts = sc.Apply(opts)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	out, err := inBubble(t, o, setup)
	if err != nil {
		return nil, fmt.Errorf("sim: seed %d: %w", o.Seed, err)
	}
	return evaluate(o, out), nil
}

// evaluate checks a finished run, outside the bubble.
func evaluate(o Options, out *outcome) *Result {
	o.Schedule, o.Processes = out.schedule, out.processes
	r := &Result{Options: o, History: out.history, Virtual: out.virtual, Digest: core.Digest(out.events),
		hdr: out.hdr, events: out.events, t0: out.t0}
	for _, inv := range o.Invariants {
		for _, v := range inv.Check(out.history) {
			v.Property, v.Tenure = inv.Name, false
			r.Violations = append(r.Violations, v)
		}
	}
	for _, name := range TenureProperties {
		vs, err := checks.RunCheck(name, out.events)
		if err != nil {
			// A name in TenureProperties the registry lost: a bug here.
			panic(err)
		}
		for _, v := range vs {
			r.Violations = append(r.Violations, Violation{Property: v.Check, Tenure: true, Clauses: v.Clauses, At: v.At - out.t0, Msg: v.Msg})
		}
	}
	// The timeline counts from the processes' start, as the schedule does.
	shifted := slices.Clone(out.events)
	for i := range shifted {
		shifted[i].At -= out.t0
		if m := shifted[i].Fault; m != nil {
			// Named as the user named them (process-pause, not the
			// recipe driver's holder-pause).
			pm := *m
			pm.Kind = core.FaultKind(publicKind(m.Kind))
			shifted[i].Fault = &pm
		}
	}
	r.Timeline = checks.FaultTimeline(shifted)
	return r
}

// Check runs opts like Simulate and fails t if the run broke anything:
// then it shrinks the failure (unless opts.NoShrink), writes the artifacts
// and reports the violations, the fault timeline, the smallest schedule
// found and the command that replays it. A run that could not be carried
// out fails t at once.
func Check(t *testing.T, opts Options, setup func(*Cluster)) *Result {
	t.Helper()
	r, err := Simulate(t, opts, setup)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() {
		t.Logf("seed %d: held %s over %v of virtual time; faults: %s", r.Options.Seed, strings.Join(r.properties(), ", "), r.Virtual.Round(time.Second), r.Timeline)
		return r
	}
	if !r.Options.NoShrink {
		s, err := Shrink(t, r, setup)
		if err != nil {
			t.Errorf("%v", err)
		} else {
			r.Shrunk = s
		}
	}
	if err := r.WriteArtifacts(artifactFolder(t, r)); err != nil {
		t.Errorf("%v", err)
	}
	t.Error(r.Report(t))
	return r
}

// properties names everything the run checked.
func (r *Result) properties() []string {
	var out []string
	for _, inv := range r.Options.Invariants {
		out = append(out, inv.Name)
	}
	for _, p := range TenureProperties {
		out = append(out, "tenure "+p)
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// artifactFolder is a folder of its own for r under Options.ArtifactDir.
func artifactFolder(t *testing.T, r *Result) string {
	root := r.Options.ArtifactDir
	if root == "" {
		root = filepath.Join(os.TempDir(), "tenure-sim")
	}
	name := fmt.Sprintf("%s-seed-%d-%.8s", unsafeName.ReplaceAllString(t.Name(), "_"), r.Options.Seed, r.Digest)
	return filepath.Join(root, name)
}

// WriteArtifacts writes the run's evidence to dir: what sim's own runs
// write (the schedule, the full trace with the history among it as notes,
// the violations, and report.html, the page to look at first), the history alone (history.txt), the report
// (report.txt) and the scenario that replays it (scenario.json: the
// smallest one if shrunk).
func (r *Result) WriteArtifacts(dir string) error {
	r.ArtifactDir = dir
	ev := checks.Evaluation{LinTimeout: 5 * time.Second}
	// The report draws on the trace's time, from boot.
	for _, v := range r.Violations {
		ev.Violations = append(ev.Violations, checks.Violation{Check: v.Property, Clauses: v.Clauses, At: v.At + r.t0, Msg: v.Msg})
	}
	wr := &workload.Result{Config: workload.Config{Seed: r.Options.Seed, Servers: r.Options.Servers, Duration: r.Options.Duration, ACL: r.Options.ACL},
		Header: r.hdr, Events: r.events, Digest: r.Digest, Virtual: r.Virtual}
	if _, err := report.Write(dir, wr, ev, "", r.beliefSpans()...); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	var hist strings.Builder
	for _, rec := range r.History.Records {
		fmt.Fprintln(&hist, rec)
	}
	sc := r.scenario()
	errs := []error{
		os.WriteFile(filepath.Join(dir, "history.txt"), []byte(hist.String()), 0o644),
		os.WriteFile(filepath.Join(dir, "report.txt"), []byte(r.Report(nil)+"\n"), 0o644),
		writeScenarioFile(r.scenarioPath(), sc),
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("sim: artifacts in %s: %w", dir, err)
		}
	}
	return nil
}

// beliefSpans are the processes' beliefs (Begin to End) as the report's
// lanes draw them, on the trace's time.
func (r *Result) beliefSpans() []checks.Span {
	var names []string
	for _, rec := range r.History.Records {
		if rec.Kind == KindBegin && !slices.Contains(names, rec.Name) {
			names = append(names, rec.Name)
		}
	}
	var out []checks.Span
	for _, name := range names {
		for _, sp := range r.History.Spans(name) {
			end := sp.To + r.t0
			if sp.Open {
				end = -1 // drawn to the end of the run
			}
			out = append(out, checks.Span{Kind: checks.SpanBelief, Lane: sp.Process, Start: sp.From + r.t0, End: end, Label: "believes " + name})
		}
	}
	return out
}

// scenario is the run to replay: the smallest one if shrunk.
func (r *Result) scenario() Scenario {
	o, prop := r.Options, ""
	if r.Shrunk != nil {
		o, prop = r.Shrunk.Result.Options, r.Shrunk.Property
	} else if len(r.Violations) > 0 {
		prop = r.Violations[0].Property
	}
	return Scenario{Seed: o.Seed, Servers: o.Servers, Duration: o.Duration, Property: prop, Schedule: o.Schedule, Processes: o.Processes, ACL: o.ACL}
}

func (r *Result) scenarioPath() string { return filepath.Join(r.ArtifactDir, "scenario.json") }

// ReplayCommand is the command that reruns the scenario the artifacts
// hold, for the test t (the test that ran it).
func (r *Result) ReplayCommand(t *testing.T) string {
	var pat []string
	for _, part := range strings.Split(t.Name(), "/") {
		pat = append(pat, "^"+regexp.QuoteMeta(part)+"$")
	}
	dir, _ := os.Getwd()
	return fmt.Sprintf("cd %s && %s=%s go test -run '%s' .", dir, ScenarioEnv, r.scenarioPath(), strings.Join(pat, "/"))
}

// historyContext is how many records before the first violation the
// report shows.
const historyContext = 12

// Report is the run's account for a person: the violations, what held,
// the faults, the shrink, the history up to the first violation, the
// artifacts and (with t) the replay command.
func (r *Result) Report(t *testing.T) string {
	var b strings.Builder
	o := r.Options
	acls := ""
	if o.ACL {
		acls = ", ACLs on"
	}
	fmt.Fprintf(&b, "seed %d (%d servers, %d processes, %v%s): ", o.Seed, o.Servers, len(o.Processes), o.Duration, acls)
	if !r.Failed() {
		fmt.Fprintf(&b, "held %s", strings.Join(r.properties(), ", "))
	} else {
		fmt.Fprintf(&b, "%d violations", len(r.Violations))
		for i, v := range r.Violations {
			if i == 10 {
				fmt.Fprintf(&b, "\n  … %d more", len(r.Violations)-10)
				break
			}
			fmt.Fprintf(&b, "\n  %v", v)
		}
		var held []string
		for _, p := range r.properties() {
			if !r.Broke(strings.TrimPrefix(p, "tenure ")) {
				held = append(held, p)
			}
		}
		if len(held) > 0 {
			fmt.Fprintf(&b, "\nheld: %s", strings.Join(held, ", "))
		}
	}
	fmt.Fprintf(&b, "\nfaults: %s", r.Timeline)
	if s := r.Shrunk; s != nil {
		fmt.Fprintf(&b, "\nshrunk to %d of %d faults and %d of %d processes (%s), %d candidates each run %d times, still failing %s:\n%s",
			len(s.Schedule), len(s.From), len(s.Processes), len(s.FromProcesses), strings.Join(s.Processes, ","), s.Candidates, s.Runs, s.Property,
			indent(FormatSchedule(s.Schedule)))
		fmt.Fprintf(&b, "\nthe smallest run: %v\nits faults: %s", s.Result.first(s.Property), s.Result.Timeline)
	}
	if r.Failed() {
		h, first := r.History, r.Violations[0]
		if r.Shrunk != nil {
			h, first = r.Shrunk.Result.History, r.Shrunk.Result.first(r.Shrunk.Property)
		}
		upto := 0
		for upto < len(h.Records) && h.Records[upto].At <= first.At {
			upto++
		}
		from := max(0, upto-historyContext)
		fmt.Fprintf(&b, "\nhistory up to the first violation (records %d-%d of %d):", from+1, upto, len(h.Records))
		for _, rec := range h.Records[from:upto] {
			fmt.Fprintf(&b, "\n  %v", rec)
		}
	}
	if r.ArtifactDir != "" {
		fmt.Fprintf(&b, "\nartifacts: %s\nreport: %s", r.ArtifactDir, filepath.Join(r.ArtifactDir, report.FileName))
		if t != nil {
			fmt.Fprintf(&b, "\nreplay: %s", r.ReplayCommand(t))
		}
	}
	return b.String()
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
