package model_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestEveryClauseHasAScenario: every contract and tenure clause of
// spec/SPEC.md is named in the header comment of at least one scenario in
// testdata/model, so the model's reading of each clause is written down.
func TestEveryClauseHasAScenario(t *testing.T) {
	spec, err := os.ReadFile("../spec/SPEC.md")
	if err != nil {
		t.Fatalf("read SPEC: %v", err)
	}
	clauses := regexp.MustCompile(`(?m)^### (S\d+) · (contract|tenure|consul)`).FindAllStringSubmatch(string(spec), -1)
	if len(clauses) < 50 {
		t.Fatalf("found only %d clause headings in SPEC.md; has its format changed?", len(clauses))
	}
	files, err := filepath.Glob("../testdata/model/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	cited := map[string]bool{}
	comment := regexp.MustCompile(`(?m)^#.*$`)
	id := regexp.MustCompile(`\bS\d+\b`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range comment.FindAllString(string(b), -1) {
			for _, c := range id.FindAllString(line, -1) {
				cited[c] = true
			}
		}
	}
	for _, c := range clauses {
		if c[2] != "consul" && !cited[c[1]] {
			t.Errorf("%s (%s) has no scenario in testdata/model", c[1], c[2])
		}
	}
}
