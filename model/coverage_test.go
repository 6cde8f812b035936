package model_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var (
	clauseHeading = regexp.MustCompile(`(?m)^### (S\d+) · (contract|tenure|consul)`)
	commentLine   = regexp.MustCompile(`(?m)^#.*$`)
	clauseID      = regexp.MustCompile(`\bS\d+\b`)
)

// uncitedClauses lists the contract and tenure clauses of spec that no
// scenario's comment lines cite.
func uncitedClauses(spec string, scenarios []string) []string {
	cited := map[string]bool{}
	for _, sc := range scenarios {
		for _, line := range commentLine.FindAllString(sc, -1) {
			for _, c := range clauseID.FindAllString(line, -1) {
				cited[c] = true
			}
		}
	}
	var missing []string
	for _, c := range clauseHeading.FindAllStringSubmatch(spec, -1) {
		if c[2] != "consul" && !cited[c[1]] {
			missing = append(missing, c[1]+" ("+c[2]+")")
		}
	}
	return missing
}

// TestEveryClauseHasAScenario: every contract and tenure clause of
// spec/SPEC.md is named in the header comment of at least one scenario in
// testdata/model, so the model's reading of each clause is written down.
func TestEveryClauseHasAScenario(t *testing.T) {
	spec, err := os.ReadFile("../spec/SPEC.md")
	if err != nil {
		t.Fatalf("read SPEC: %v", err)
	}
	if n := len(clauseHeading.FindAllString(string(spec), -1)); n < 50 {
		t.Fatalf("found only %d clause headings in SPEC.md; has its format changed?", n)
	}
	files, err := filepath.Glob("../testdata/model/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	var scenarios []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, string(b))
	}
	for _, c := range uncitedClauses(string(spec), scenarios) {
		t.Errorf("%s has no scenario in testdata/model", c)
	}
}

// TestUncitedClausesCatchesGaps: a clause cited only outside a comment, or
// not at all, is reported; consul clauses never are.
func TestUncitedClausesCatchesGaps(t *testing.T) {
	spec := "### S1 · contract\n### S2 · tenure\n### S3 · consul\n"
	got := uncitedClauses(spec, []string{"# S1: covered\nlock key=S2\n----\n"})
	if len(got) != 1 || got[0] != "S2 (tenure)" {
		t.Fatalf("uncited = %v, want [S2 (tenure)]", got)
	}
}
