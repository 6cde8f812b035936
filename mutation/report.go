package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mutant statuses as gremlins writes them.
const (
	statusKilled     = "KILLED"
	statusLived      = "LIVED"
	statusNotCovered = "NOT COVERED"
	statusTimedOut   = "TIMED OUT"
	statusNotViable  = "NOT VIABLE"
)

// mutant is one mutation gremlins tried.
type mutant struct {
	file   string // relative to the module root, e.g. model/apply.go
	kind   string // gremlins' mutator, e.g. CONDITIONALS_NEGATION
	status string
	line   int
	column int
	text   string // the mutated source line, trimmed
}

func (m mutant) String() string {
	return fmt.Sprintf("%s:%d:%d %s %s  %q", m.file, m.line, m.column, m.kind, m.status, m.text)
}

// survived reports whether no test noticed the mutant.
func (m mutant) survived() bool {
	return m.status == statusLived || m.status == statusNotCovered
}

// gremlinsReport is the part of gremlins' -o JSON that the driver reads.
type gremlinsReport struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// readReport decodes a gremlins report for the package in dir and attaches
// each mutant's source line, read from root.
func readReport(data []byte, root, dir string) ([]mutant, error) {
	var r gremlinsReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode gremlins report: %w", err)
	}
	var out []mutant
	lines := map[string][]string{}
	for _, f := range r.Files {
		rel := filepath.ToSlash(filepath.Join(dir, f.FileName))
		src, ok := lines[rel]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				return nil, fmt.Errorf("read mutated file: %w", err)
			}
			src = strings.Split(string(data), "\n")
			lines[rel] = src
		}
		for _, m := range f.Mutations {
			if m.Line < 1 || m.Line > len(src) {
				return nil, fmt.Errorf("%s: mutant at line %d, file has %d lines", rel, m.Line, len(src))
			}
			out = append(out, mutant{
				file: rel, kind: m.Type, status: m.Status, line: m.Line, column: m.Column,
				text: strings.TrimSpace(src[m.Line-1]),
			})
		}
	}
	return out, nil
}

// tally is one row of the report.
type tally struct {
	killed, lived, notCovered, timedOut, notViable int
}

func count(ms []mutant) tally {
	var t tally
	for _, m := range ms {
		switch m.status {
		case statusKilled:
			t.killed++
		case statusLived:
			t.lived++
		case statusNotCovered:
			t.notCovered++
		case statusTimedOut:
			t.timedOut++
		case statusNotViable:
			t.notViable++
		}
	}
	return t
}

// efficacy is gremlins' test efficacy: killed over killed+lived, in percent.
func (t tally) efficacy() float64 {
	return percent(t.killed, t.killed+t.lived)
}

// coverage is gremlins' mutator coverage: killed+lived over those plus the
// not-covered ones, in percent.
func (t tally) coverage() float64 {
	return percent(t.killed+t.lived, t.killed+t.lived+t.notCovered)
}

func percent(n, d int) float64 {
	if d == 0 {
		return 100
	}
	return 100 * float64(n) / float64(d)
}
