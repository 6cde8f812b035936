// Package spec holds tenure's contract (SPEC.md); this test keeps SPEC.md's
// traceability table true by checking that every name it cites exists.
package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/spec/conformance"
)

type traceRow struct {
	clause, status string
	cells          map[string]string // column name → cell text
}

func readTable(t *testing.T) []traceRow {
	t.Helper()
	b, err := os.ReadFile("SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "## Traceability")
	if i < 0 {
		t.Fatal("SPEC.md has no Traceability section")
	}
	var header []string
	var rows []traceRow
	for _, line := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "S"):
			r := traceRow{clause: cells[0], status: cells[1], cells: map[string]string{}}
			for j := 2; j < len(cells) && j < len(header); j++ {
				r.cells[header[j]] = cells[j]
			}
			rows = append(rows, r)
		}
	}
	if len(rows) < 50 {
		t.Fatalf("traceability table has %d rows", len(rows))
	}
	return rows
}

// sourceText concatenates the Go (or other) files matching the globs.
func sourceText(t *testing.T, globs ...string) string {
	t.Helper()
	var sb strings.Builder
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sb.Write(b)
		}
	}
	return sb.String()
}

var codeName = regexp.MustCompile("`([^`]+)`")

// cellProblems lists what a cell cites that does not appear in source.
// required says whether a non-consul clause must fill the cell.
func cellProblems(source, scenarioDir, column string, r traceRow, required bool) []string {
	var problems []string
	cell := r.cells[column]
	if required && cell == "" && r.status != "consul" {
		problems = append(problems, "empty "+column+" cell")
	}
	for _, m := range codeName.FindAllStringSubmatch(cell, -1) {
		for _, part := range strings.FieldsFunc(m[1], func(c rune) bool { return c == '.' || c == '/' || c == ' ' || c == '→' }) {
			if part == "" || strings.ContainsAny(part, `"=()`) {
				continue
			}
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(part) + `\b`).MatchString(source) {
				problems = append(problems, column+" cell names "+part+", not found")
			}
		}
	}
	for _, f := range regexp.MustCompile(`\b[\w-]+\.txt\b`).FindAllString(cell, -1) {
		if _, err := os.Stat(filepath.Join(scenarioDir, f)); err != nil {
			problems = append(problems, "scenario "+f+" does not exist")
		}
	}
	return problems
}

// TestTraceabilityNamesExist: every `name` in the Model column is an
// identifier (or Type.Method) of package model, every scenario file it cites
// exists, every Impl name is in impl/, every TLA+ name is in
// tla/Sessions.tla, and every Sim name is a check of sim/.
func TestTraceabilityNamesExist(t *testing.T) {
	columns := []struct {
		name     string
		source   string
		required bool
	}{
		{"Model", sourceText(t, "../model/*.go"), true},
		{"Impl", sourceText(t, "../impl/*.go", "../impl/httpapi/*.go", "../impl/agent/*.go"), false},
		{"TLA+", sourceText(t, "../tla/Sessions.tla"), false},
		{"Sim", sourceText(t, "../sim/*.go"), false},
	}
	cases := map[string]bool{}
	for _, c := range conformance.Suite() {
		cases[c.ID()] = true
	}
	for _, r := range readTable(t) {
		for _, p := range conformanceProblems(cases, r) {
			t.Errorf("%s: %s", r.clause, p)
		}
		for _, c := range columns {
			for _, p := range cellProblems(c.source, "../testdata/model", c.name, r, c.required) {
				t.Errorf("%s: %s", r.clause, p)
			}
		}
	}
}

// conformanceProblems: every clause names at least one case, and each name
// is a case of that clause (case IDs are "<clause>/<name>").
func conformanceProblems(cases map[string]bool, r traceRow) []string {
	names := codeName.FindAllStringSubmatch(r.cells["Conformance"], -1)
	if len(names) == 0 {
		return []string{"no conformance case"}
	}
	var problems []string
	for _, n := range names {
		if !cases[r.clause+"/"+n[1]] {
			problems = append(problems, fmt.Sprintf("conformance case %s/%s does not exist", r.clause, n[1]))
		}
	}
	return problems
}

// TestTraceabilityCheckerFails: rows citing missing names, missing
// scenarios, or nothing at all are reported.
func TestTraceabilityCheckerFails(t *testing.T) {
	model := sourceText(t, "../model/*.go")
	bad := []traceRow{
		{clause: "S1", status: "contract", cells: map[string]string{"Model": "`noSuchFunction`"}},
		{clause: "S2", status: "contract", cells: map[string]string{"Model": "`lock` (nosuch.txt)"}},
		{clause: "S3", status: "tenure", cells: map[string]string{"Model": ""}},
	}
	for _, r := range bad {
		if len(cellProblems(model, "../testdata/model", "Model", r, true)) == 0 {
			t.Errorf("%s: bad row %q passed", r.clause, r.cells["Model"])
		}
	}
	cases := map[string]bool{"S1/real": true}
	for _, cell := range []string{"", "`missing`", "`real`, `missing`"} {
		if len(conformanceProblems(cases, traceRow{clause: "S1", cells: map[string]string{"Conformance": cell}})) == 0 {
			t.Errorf("conformance cell %q passed", cell)
		}
	}
	if len(conformanceProblems(cases, traceRow{clause: "S2", cells: map[string]string{"Conformance": "`real`"}})) == 0 {
		t.Errorf("a case of another clause passed")
	}
	good := traceRow{clause: "S9", status: "consul", cells: map[string]string{"Model": ""}}
	if p := cellProblems(model, "../testdata/model", "Model", good, true); len(p) != 0 {
		t.Errorf("empty cell of a consul clause reported: %v", p)
	}
}
