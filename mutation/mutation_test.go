package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleReport = `{"go_module":"m","files":[{"file_name":"a.go","mutations":[
 {"type":"CONDITIONALS_NEGATION","status":"KILLED","line":3,"column":5},
 {"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":3,"column":7},
 {"type":"ARITHMETIC_BASE","status":"NOT COVERED","line":4,"column":9},
 {"type":"INCREMENT_DECREMENT","status":"TIMED OUT","line":4,"column":2}]}]}`

func writeSample(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "pkg"), 0o750); err != nil {
		t.Fatal(err)
	}
	src := "package pkg\n\nif a < b {\n\tx = y + 1\n"
	if err := os.WriteFile(filepath.Join(root, "pkg", "a.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestReadReportAttachesSourceText(t *testing.T) {
	ms, err := readReport([]byte(sampleReport), writeSample(t), "pkg")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 || ms[1].file != "pkg/a.go" || ms[1].text != "if a < b {" || ms[2].text != "x = y + 1" {
		t.Fatalf("mutants = %v", ms)
	}
	got := count(ms)
	if got != (tally{killed: 1, lived: 1, notCovered: 1, timedOut: 1}) {
		t.Fatalf("tally = %+v", got)
	}
	if e := got.efficacy(); e != 50 {
		t.Fatalf("efficacy = %v, want 50", e)
	}
	if c := got.coverage(); c < 66.6 || c > 66.7 {
		t.Fatalf("coverage = %v, want 66.7", c)
	}
}

func TestReadReportRejectsALineOutsideTheFile(t *testing.T) {
	bad := strings.Replace(sampleReport, `"line":4,"column":9`, `"line":40,"column":9`, 1)
	if _, err := readReport([]byte(bad), writeSample(t), "pkg"); err == nil {
		t.Fatal("a mutant past the end of its file was accepted")
	}
}

// TestTriageFailsOnAnUnexplainedSurvivor is the driver's teeth: a lived and a
// not-covered mutant with no entry are both reported; an entry for each makes
// them pass; an entry for a killed mutant is stale.
func TestTriageFailsOnAnUnexplainedSurvivor(t *testing.T) {
	ms, err := readReport([]byte(sampleReport), writeSample(t), "pkg")
	if err != nil {
		t.Fatal(err)
	}
	mutated := map[string]bool{"pkg/a.go": true}
	unexplained, stale := triage(ms, nil, mutated)
	if len(unexplained) != 2 || unexplained[0].status != statusLived || unexplained[1].status != statusNotCovered {
		t.Fatalf("unexplained = %v, want the lived and the not-covered mutant", unexplained)
	}
	if len(stale) != 0 {
		t.Fatalf("stale = %v", stale)
	}

	eqs, err := parseEquivalents(strings.NewReader(`# comment

pkg/a.go | CONDITIONALS_BOUNDARY | if a < b { | a and b are never equal here
pkg/a.go | ARITHMETIC_BASE | x = y + 1 | x is only logged
pkg/a.go | CONDITIONALS_NEGATION | if a < b { | killed: this entry is stale
other/b.go | ARITHMETIC_BASE | z := 1 | a target that did not run
`))
	if err != nil {
		t.Fatal(err)
	}
	unexplained, stale = triage(ms, eqs, mutated)
	if len(unexplained) != 0 {
		t.Fatalf("unexplained = %v, want none", unexplained)
	}
	if len(stale) != 1 || stale[0].kind != "CONDITIONALS_NEGATION" {
		t.Fatalf("stale = %v, want the entry for the killed mutant", stale)
	}
}

func TestParseEquivalentsRejectsMalformedLines(t *testing.T) {
	for _, in := range []string{
		"pkg/a.go | KIND | text",              // no reason
		"pkg/a.go | KIND | text |  ",          // empty reason
		"pkg/a.go | KIND | a | b | c | extra", // too many fields
	} {
		if _, err := parseEquivalents(strings.NewReader(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
}

// TestEquivalentsFileParses keeps the checked-in file well formed.
func TestEquivalentsFileParses(t *testing.T) {
	f, err := os.Open("equivalents.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	eqs, err := parseEquivalents(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range eqs {
		src, err := os.ReadFile(filepath.Join("..", e.file))
		if err != nil {
			t.Errorf("equivalents.txt:%d names a missing file: %v", e.lineNo, err)
			continue
		}
		// A quoted line the source no longer has explains nothing, and
		// make mutate would fail on it as stale only when it runs.
		if !hasTrimmedLine(string(src), e.text) {
			t.Errorf("equivalents.txt:%d quotes %q, which %s no longer has", e.lineNo, e.text, e.file)
		}
	}
}

// hasTrimmedLine reports whether some line of src, trimmed, is text.
func hasTrimmedLine(src, text string) bool {
	for line := range strings.SplitSeq(src, "\n") {
		if strings.TrimSpace(line) == text {
			return true
		}
	}
	return false
}
