package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Outcome of a case or clause.
type Outcome string

// Outcomes.
const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP"
)

// CaseResult is the outcome of one case.
type CaseResult struct {
	ID       string        `json:"id"`
	Clause   string        `json:"clause"`
	Name     string        `json:"name"`
	Status   Status        `json:"status"`
	Outcome  Outcome       `json:"outcome"`
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"seconds"`
	Reason   string        `json:"reason,omitempty"`
	Log      []string      `json:"log,omitempty"`
}

// ClauseResult folds the cases of one clause: FAIL if any case failed, else
// PASS if any passed, else SKIP.
type ClauseResult struct {
	ID       string        `json:"id"`
	Status   Status        `json:"status"`
	Outcome  Outcome       `json:"outcome"`
	Cases    int           `json:"cases"`
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"seconds"` // longest case of the clause
	Reason   string        `json:"reason,omitempty"`
}

// Report is the result of Run.
type Report struct {
	Addr     string         `json:"addr"`
	Profile  Status         `json:"profile"`
	Started  time.Time      `json:"started"`
	Duration time.Duration  `json:"-"`
	Seconds  float64        `json:"seconds"`
	Error    string         `json:"error,omitempty"` // run-level problem (bad filter, server unreachable)
	Passed   int            `json:"passed"`          // case counts
	Failed   int            `json:"failed"`
	Skipped  int            `json:"skipped"`
	Clauses  []ClauseResult `json:"clauses"`
	Cases    []CaseResult   `json:"cases"`
}

// OK reports whether the run had no failures and no run-level error.
func (r Report) OK() bool { return r.Error == "" && r.Failed == 0 }

// ExitCode is what a CLI run exits with: 0 when OK, 1 otherwise.
func (r Report) ExitCode() int {
	if r.OK() {
		return 0
	}
	return 1
}

func (r *Report) count() {
	r.Passed, r.Failed, r.Skipped = 0, 0, 0
	for _, c := range r.Cases {
		switch c.Outcome {
		case Pass:
			r.Passed++
		case Fail:
			r.Failed++
		case Skip:
			r.Skipped++
		}
	}
}

// summarize folds case results into one row per clause, in clause order.
func summarize(cases []CaseResult) []ClauseResult {
	byID := map[string]*ClauseResult{}
	var order []string
	for _, c := range cases {
		cr, ok := byID[c.Clause]
		if !ok {
			cr = &ClauseResult{ID: c.Clause, Status: c.Status}
			byID[c.Clause] = cr
			order = append(order, c.Clause)
		}
		cr.Cases++
		if c.Duration > cr.Duration {
			cr.Duration = c.Duration
		}
		switch {
		case c.Outcome == Fail && cr.Outcome != Fail:
			cr.Outcome, cr.Reason = Fail, c.Name+": "+c.Reason
		case c.Outcome == Pass && cr.Outcome != Fail:
			cr.Outcome, cr.Reason = Pass, ""
		case c.Outcome == Skip && cr.Outcome == "":
			cr.Outcome, cr.Reason = Skip, c.Reason
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return clauseLess(order[i], order[j]) })
	out := make([]ClauseResult, 0, len(order))
	for _, id := range order {
		cr := byID[id]
		cr.Seconds = cr.Duration.Seconds()
		out = append(out, *cr)
	}
	return out
}

// clauseLess orders "S2" before "S10".
func clauseLess(a, b string) bool {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "S"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "S"))
	if ea != nil || eb != nil {
		return a < b
	}
	return na < nb
}

// oneLine squeezes a reason into a table cell.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// WriteTable prints one row per clause, then every failing case in full.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLAUSE\tSTATUS\tRESULT\tCASES\tTIME\tREASON")
	for _, c := range r.Clauses {
		reason := ""
		if c.Outcome != Pass {
			reason = oneLine(c.Reason, 110)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.2fs\t%s\n", c.ID, c.Status, c.Outcome, c.Cases, c.Seconds, reason)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	var b strings.Builder
	for _, c := range r.Cases {
		if c.Outcome != Fail {
			continue
		}
		fmt.Fprintf(&b, "\nFAIL %s (%.2fs)\n    %s\n", c.ID, c.Seconds, strings.ReplaceAll(c.Reason, "\n", "\n    "))
		for _, l := range c.Log {
			fmt.Fprintf(&b, "    log: %s\n", l)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s\n", r.Error)
	}
	verdict := "ok"
	if !r.OK() {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "\n%s: profile %s against %s: %d clauses; cases %d pass, %d fail, %d skip; %.1fs\n",
		verdict, r.Profile, r.Addr, len(r.Clauses), r.Passed, r.Failed, r.Skipped, r.Seconds)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// WriteJSON prints the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write json report: %w", err)
	}
	return nil
}
