package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMutateLineSwapsTheOperatorAtTheColumn(t *testing.T) {
	for _, tc := range []struct {
		line, kind string
		col        int
		want       string
	}{
		{"\t\tcase e.Key != name:", "CONDITIONALS_NEGATION", 14, "\t\tcase e.Key == name:"},
		{"\tcase n <= 0:", "CONDITIONALS_BOUNDARY", 9, "\tcase n < 0:"},
		{"\tcase n <= 0:", "CONDITIONALS_NEGATION", 9, "\tcase n > 0:"},
		{"\tcase a && b:", "INVERT_LOGICAL", 9, "\tcase a || b:"},
		{"\tcase n > a+1:", "ARITHMETIC_BASE", 12, "\tcase n > a-1:"},
	} {
		got, err := mutateLine(tc.line, mutant{kind: tc.kind, column: tc.col})
		if err != nil || got != tc.want {
			t.Errorf("%q %s@%d = %q, %v; want %q", tc.line, tc.kind, tc.col, got, err, tc.want)
		}
	}
	for _, bad := range []mutant{
		{kind: "CONDITIONALS_NEGATION", column: 2},  // no operator there
		{kind: "CONDITIONALS_NEGATION", column: 99}, // past the end
		{kind: "INVERT_LOOPCTRL", column: 9},        // no swap known
	} {
		if got, err := mutateLine("\tcase n <= 0:", bad); err == nil {
			t.Errorf("%+v applied: %q", bad, got)
		}
	}
}

// TestCaseClauseMutantsAreRun runs the overlay runner on a small module:
// a case-clause mutant its test notices is KILLED, one it does not is
// LIVED, and a mutant on a non-case line is left as gremlins reported it.
func TestCaseClauseMutantsAreRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example\n\ngo 1.22\n")
	write("p/p.go", "package p\n\nfunc Size(n int) string {\n\tswitch {\n\tcase n > 10:\n\t\treturn \"big\"\n\tcase n > 0:\n\t\treturn \"small\"\n\t}\n\treturn \"none\"\n}\n")
	write("p/p_test.go", "package p\n\nimport \"testing\"\n\nfunc TestSize(t *testing.T) {\n\tif Size(20) != \"big\" || Size(5) != \"small\" {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n")
	ms := []mutant{
		{file: "p/p.go", kind: "CONDITIONALS_NEGATION", status: statusNotCovered, line: 5, column: 9, text: "case n > 10:"},
		{file: "p/p.go", kind: "CONDITIONALS_BOUNDARY", status: statusNotCovered, line: 7, column: 9, text: "case n > 0:"},
		{file: "p/p.go", kind: "CONDITIONALS_NEGATION", status: statusNotCovered, line: 10, column: 2, text: "return \"none\""},
	}
	got, err := runCaseClauseMutants(root, ms, 2*time.Minute, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{statusKilled, statusLived, statusNotCovered}
	for i, m := range got {
		if m.status != want[i] {
			t.Errorf("mutant %d (%s at line %d): %s, want %s", i, m.kind, m.line, m.status, want[i])
		}
	}
}

// TestInvertLogicalKeepsTheTree: the swapped operator's own expression is
// parenthesized, as gremlins prints it, so a chain keeps its shape.
func TestInvertLogicalKeepsTheTree(t *testing.T) {
	src := "package p\n\nfunc f(a, b, c bool) bool {\n\tswitch {\n\tcase a && b && c:\n\t\treturn true\n\t}\n\treturn a || b && c\n}\n"
	for _, tc := range []struct {
		line, col int
		want      string
	}{
		{5, 9, "\tcase (a || b) && c:"},  // the first && joins a and b
		{5, 14, "\tcase (a && b || c):"}, // the second joins (a && b) and c
		{8, 11, "\treturn (a && b && c)"},
		{8, 16, "\treturn a || (b || c)"},
	} {
		got, err := mutateSource([]byte(src), mutant{file: "p.go", kind: "INVERT_LOGICAL", line: tc.line, column: tc.col})
		if err != nil {
			t.Fatalf("%d:%d: %v", tc.line, tc.col, err)
		}
		if line := strings.Split(string(got), "\n")[tc.line-1]; line != tc.want {
			t.Errorf("%d:%d: %q, want %q", tc.line, tc.col, line, tc.want)
		}
	}
	if _, err := mutateSource([]byte(src), mutant{file: "p.go", kind: "INVERT_LOGICAL", line: 5, column: 2}); err == nil {
		t.Error("a position without && or || was mutated")
	}
}
