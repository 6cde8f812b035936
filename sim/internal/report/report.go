// Package report writes a failed simulator run as one self-contained HTML
// page: a summary, the checks with their counts, the faults, a timeline
// lane per server and client (faults, elections, leaderships,
// invalidations, lock tenures) with the violations marked, the violations
// themselves and porcupine's visualisation of the history. The page
// fetches nothing: its CSS and SVG are inline, and porcupine's page is
// embedded whole in an iframe's srcdoc.
package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// FileName is the report's name in a run's artifact folder.
const FileName = "report.html"

// Write writes a run's artifacts (checks.WriteArtifacts: schedule, trace,
// violations, history, porcupine's page) and then the report that embeds
// them to dir, a folder of the run's own; it returns the report's path.
// replay is the command that reruns the run ("" to leave it out); extra
// spans are drawn on the lanes beside the trace's own (the harness's
// processes' beliefs, SpanBelief).
//
// An artifact that could not be written does not stop the report, which
// is still written when it can be; the error names both.
func Write(dir string, res *workload.Result, ev checks.Evaluation, replay string, extra ...checks.Span) (string, error) {
	var errs []error
	if err := checks.WriteArtifacts(dir, res, ev); err != nil {
		errs = append(errs, fmt.Errorf("report: %w", err))
	}
	porcupine, err := os.ReadFile(filepath.Join(dir, "linearizability.html"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("report: porcupine's page: %w", err))
	}
	path := filepath.Join(dir, FileName)
	f, err := os.Create(path)
	if err != nil {
		return "", errors.Join(append(errs, fmt.Errorf("report: %w", err))...)
	}
	err = Render(f, res, ev, replay, string(porcupine), extra...)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("report: %w", cerr)
	}
	if err != nil {
		return "", errors.Join(append(errs, err)...)
	}
	return path, errors.Join(errs...)
}

// Render writes the report page to w; porcupine is porcupine's HTML page
// for the run's history ("" if there is none).
func Render(w io.Writer, res *workload.Result, ev checks.Evaluation, replay, porcupine string, extra ...checks.Span) error {
	p := buildPage(res, ev, replay, porcupine, extra)
	if err := page.Execute(w, p); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	return nil
}

// pageData is what the template reads.
type pageData struct {
	Seed      uint64
	Digest    string
	Variant   string
	Servers   int
	Clients   int
	Virtual   string
	Events    int
	Replay    string
	Counts    []checks.Count
	Faults    []faultRow
	Lanes     laneView
	Violated  []violationRow
	Lin       string
	LinOps    int
	Porcupine string
}

type faultRow struct {
	Start, End, Length string
	Kind, Targets      string
}

type violationRow struct {
	ID, Check, Clauses, At, Msg string
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

var page = template.Must(template.New("report").Parse(pageTemplate))
