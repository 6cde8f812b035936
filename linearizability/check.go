package linearizability

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/tenurekv/tenure/model"
)

// DefaultTimeout bounds a check when Options.Timeout is 0: porcupine is
// exponential in the worst case, so a check never runs unbounded.
const DefaultTimeout = time.Minute

// ErrIllegal and ErrUnknown are what Check's error wraps when a history is
// not linearizable, or could not be decided in time. A timeout is a failure:
// nothing is known to be right.
var (
	ErrIllegal = errors.New("history is not linearizable")
	ErrUnknown = errors.New("linearizability undecided before the timeout")
)

// Options tune a check.
type Options struct {
	// Timeout bounds the check; 0 means DefaultTimeout.
	Timeout time.Duration
	// ArtifactDir, when set, receives on failure <Name>.html (porcupine's
	// visualisation), <Name>.json (the history) and <Name>.txt (the report).
	ArtifactDir string
	// Visualize writes those artifacts for a linearizable history too: a
	// simulator run that failed another check still wants the picture.
	Visualize bool
	// Name is the artifacts' base name; "history" if empty.
	Name string
	// Annotations are drawn on the visualisation besides History.Faults.
	Annotations []porcupine.Annotation
	// Whole checks the history as one object instead of per key: exact for
	// cross-key anomalies but exponential in the number of concurrent
	// operations on all keys, so only for small histories (DESIGN.md).
	Whole bool
}

// Verdict is a check's outcome.
type Verdict string

// Verdicts.
const (
	VerdictOK      Verdict = "ok"
	VerdictIllegal Verdict = "illegal"
	VerdictUnknown Verdict = "unknown"
)

// Report describes a finished check.
type Report struct {
	Verdict Verdict
	// Ops is the number of operations and events checked; Dropped the
	// unknown-outcome reads and creates left out (they carry no information).
	Ops, Dropped int
	// Partitions is how many sub-histories were checked; Failed names those
	// found not linearizable, Undecided those whose search the timeout cut
	// short (a slow partition is not evidence of a violation).
	Partitions int
	Failed     []string
	Undecided  []string
	// Violations are contradictions found without a search (a session ID
	// issued twice, a list answer outside its prefix).
	Violations []string
	Elapsed    time.Duration
	// Artifacts are the files written for a failure.
	Artifacts []string
}

// OK reports whether the history was found linearizable.
func (r Report) OK() bool { return r.Verdict == VerdictOK }

// Check decides whether h is linearizable with respect to the model. The
// error is nil only for VerdictOK; it wraps ErrBadHistory for a malformed
// history (nothing is checked), ErrIllegal or ErrUnknown otherwise.
func Check(h History, opts Options) (Report, error) {
	start := time.Now()
	recs, dropped, violations, err := normalize(h)
	if err != nil {
		return Report{}, err
	}
	c, err := newChecker(h, recs)
	if err != nil {
		return Report{}, err
	}
	ops := porcupineOps(recs)
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c.whole = opts.Whole
	m := c.model()
	rep := Report{Ops: len(recs), Dropped: dropped, Violations: violations}
	parts, scopes := c.split(ops)
	rep.Partitions = len(scopes)
	for i, res := range c.checkParts(parts, timeout) {
		switch res {
		case porcupine.Illegal:
			rep.Failed = append(rep.Failed, scopes[i].name)
		case porcupine.Unknown:
			rep.Undecided = append(rep.Undecided, scopes[i].name)
		}
	}
	if len(rep.Failed) == 0 && len(rep.Undecided) == 0 && len(violations) == 0 {
		rep.Verdict = VerdictOK
		if opts.Visualize && opts.ArtifactDir != "" {
			_, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
			if err := c.writeArtifacts(&rep, h, m, info, opts); err != nil {
				return rep, err
			}
		}
		rep.Elapsed = time.Since(start)
		return rep, nil
	}
	// A partition proven illegal, or a contradiction found without a
	// search, is a violation whatever other partitions did in time.
	rep.Verdict = VerdictIllegal
	if len(rep.Failed) == 0 && len(violations) == 0 {
		rep.Verdict = VerdictUnknown
	}
	if opts.ArtifactDir != "" {
		// Run again, verbosely, to draw the partitions.
		_, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
		if err := c.writeArtifacts(&rep, h, m, info, opts); err != nil {
			return rep, err
		}
	}
	rep.Elapsed = time.Since(start)
	sentinel := ErrIllegal
	if rep.Verdict == VerdictUnknown {
		sentinel = ErrUnknown
	}
	return rep, fmt.Errorf("%w: %s", sentinel, rep.summary())
}

func newChecker(h History, recs []*rec) (*checker, error) {
	st := model.New()
	for i, cmd := range h.Setup {
		if res := st.Apply(st.Index()+1, cmd); res.Failed() {
			return nil, fmt.Errorf("%w: setup[%d] rejected by the model: %s", ErrBadHistory, i, res.Err.Msg)
		}
	}
	c := &checker{slack: int64(h.LockDelaySlack), lossy: h.LockDelayMayBeLost, t0: math.MaxInt64,
		init: &pstate{m: st, tr: map[string]tracker{}}, known: map[string]bool{}}
	c.init.canon()
	for _, r := range recs {
		c.t0 = min(c.t0, r.call)
		if id := createdID(r); id != "" {
			c.known[id] = true
		}
	}
	if c.t0 == math.MaxInt64 {
		c.t0 = 0
	}
	return c, nil
}

// porcupineOps gives each record its interval. An unknown outcome returns
// after everything else, so it may be linearized anywhere after its call.
func porcupineOps(recs []*rec) []porcupine.Operation {
	end := int64(math.MinInt64)
	for _, r := range recs {
		end = max(end, r.call)
		if r.ret != math.MaxInt64 {
			end = max(end, r.ret)
		}
	}
	ops := make([]porcupine.Operation, len(recs))
	for i, r := range recs {
		ret := r.ret
		if ret == math.MaxInt64 {
			ret = end + 1
		}
		ops[i] = porcupine.Operation{ClientId: r.client, Input: r, Call: r.call, Output: r.out, Return: ret}
	}
	return ops
}

// model is the porcupine model: nondeterministic only where one recorded
// answer admits several readings (index comparisons, see indexes.go).
func (c *checker) model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: c.partition,
		Init:      func() []any { return []any{c.init} },
		Step: func(state, input, _ any) []any {
			next := c.step(state.(*pstate), input.(stepIn))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Equal:             func(a, b any) bool { return a.(*pstate).equal(b.(*pstate)) },
		Hash:              func(s any) uint64 { return s.(*pstate).hash() },
		DescribeOperation: c.describeOp,
		DescribeState:     c.describeState,
	}
	return nm.ToModel()
}

// checkParts checks each partition on its own, side by side, each within
// timeout, and returns each one's result. porcupine's own partitioned check
// reports one result for all: after a timeout it cannot tell a partition it
// proved illegal from one it merely did not finish, and its partial
// linearizations of a cut-short search look like a failure (seed 2425's
// "failed" lock key was linearizable, only slow).
func (c *checker) checkParts(parts [][]porcupine.Operation, timeout time.Duration) []porcupine.CheckResult {
	m := c.model()
	m.Partition = nil // each part is one partition already
	results := make([]porcupine.CheckResult, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { results[i] = porcupine.CheckOperationsTimeout(m, p, timeout) })
	}
	wg.Wait()
	return results
}

func (r Report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d ops in %d partitions", r.Verdict, r.Ops, r.Partitions)
	if len(r.Failed) > 0 {
		fmt.Fprintf(&b, "; failed: %s", strings.Join(r.Failed, ", "))
	}
	if len(r.Undecided) > 0 {
		fmt.Fprintf(&b, "; undecided (timed out): %s", strings.Join(r.Undecided, ", "))
	}
	for _, v := range r.Violations {
		b.WriteString("; " + v)
	}
	if len(r.Artifacts) > 0 {
		fmt.Fprintf(&b, "; see %s", strings.Join(r.Artifacts, ", "))
	}
	return b.String()
}

func (c *checker) writeArtifacts(rep *Report, h History, m porcupine.Model, info porcupine.LinearizationInfo, opts Options) error {
	if err := os.MkdirAll(opts.ArtifactDir, 0o755); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	name := opts.Name
	if name == "" {
		name = "history"
	}
	base := filepath.Join(opts.ArtifactDir, name)
	var notes []porcupine.Annotation
	for _, f := range h.Faults {
		notes = append(notes, porcupine.Annotation{Tag: "faults", Start: int64(f.Start), End: int64(f.End),
			Description: f.Name, Details: f.Details, BackgroundColor: "#f6c3c3"})
	}
	info.AddAnnotations(append(notes, opts.Annotations...))
	if err := porcupine.VisualizePath(m, info, base+".html"); err != nil {
		return fmt.Errorf("artifacts: visualize: %w", err)
	}
	if err := h.WriteFile(base + ".json"); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	rep.Artifacts = []string{base + ".html", base + ".json", base + ".txt"}
	if err := os.WriteFile(base+".txt", []byte(rep.summary()+"\n"), 0o644); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	return nil
}
