package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDeletionsApply keeps deletionlist.go from rotting in `make test`
// (make mutate runs the deletions): each deletion's text occurs exactly
// once in a file some target mutates, and each catch names a test function
// of that file's package.
func TestDeletionsApply(t *testing.T) {
	root := filepath.Join("..")
	var mutated []string
	for _, tg := range targets {
		files, err := targetFiles(root, tg)
		if err != nil {
			t.Fatal(err)
		}
		mutated = append(mutated, files...)
	}
	names := map[string]bool{}
	for _, d := range deletions {
		if names[d.name] {
			t.Errorf("deletion %q is named twice", d.name)
		}
		names[d.name] = true
		if !slices.Contains(mutated, d.file) {
			t.Errorf("deletion %q: %s is in no target", d.name, d.file)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, d.file))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.apply(src); err != nil {
			t.Error(err)
		}
		if len(d.catch) == 0 {
			t.Errorf("deletion %q names no test that must catch it", d.name)
		}
		tests, err := filepath.Glob(filepath.Join(root, filepath.Dir(d.file), "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, f := range tests {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text.Write(b)
		}
		for _, c := range d.catch {
			top, _, _ := strings.Cut(c, "/")
			if !strings.Contains(text.String(), "func "+top+"(t *testing.T)") {
				t.Errorf("deletion %q: %s names no test function of %s", d.name, c, filepath.Dir(d.file))
			}
		}
	}
}

func TestRunPatternSelectsOneSubtest(t *testing.T) {
	got := runPattern("TestRules/a case (S22)/bad")
	if want := `^TestRules$/^a_case_\(S22\)$/^bad$`; got != want {
		t.Fatalf("runPattern = %q, want %q", got, want)
	}
	out := "    --- FAIL: TestPairs/x/bad/per-key (0.00s)\n    --- PASS: TestPairs/x/good/per-key (0.00s)\n--- PASS: TestRules/a_case (0.00s)\n"
	for _, tc := range []struct {
		test        string
		failed, ran bool
	}{
		{"TestPairs/x/bad", true, true},
		{"TestPairs/x/good", false, true},
		{"TestRules/a case", false, true},
		{"TestRules/a", false, false}, // a prefix of a name is not that test
		{"TestPairs/y", false, false},
	} {
		if failed, ran := outcome(out, tc.test); failed != tc.failed || ran != tc.ran {
			t.Errorf("outcome(%q) = %v, %v; want %v, %v", tc.test, failed, ran, tc.failed, tc.ran)
		}
	}
}

// TestDeletionRunner runs deletions on a small module: one its named test
// catches is KILLED, one a passing test survives is LIVED, and a catch
// that names no test is an error rather than either.
func TestDeletionRunner(t *testing.T) {
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
	write("p/p.go", "package p\n\nfunc Legal(n int) bool {\n\tif n < 0 {\n\t\treturn false\n\t}\n\tif n > 100 {\n\t\treturn false\n\t}\n\treturn true\n}\n")
	write("p/p_test.go", "package p\n\nimport \"testing\"\n\nfunc TestLegal(t *testing.T) {\n\tt.Run(\"negative n\", func(t *testing.T) {\n\t\tif Legal(-1) {\n\t\t\tt.Fatal(\"-1 legal\")\n\t\t}\n\t})\n\tt.Run(\"small n\", func(t *testing.T) {\n\t\tif !Legal(5) {\n\t\t\tt.Fatal(\"5 illegal\")\n\t\t}\n\t})\n}\n")
	ds := []deletion{
		{name: "negatives allowed", file: "p/p.go", find: "\tif n < 0 {\n\t\treturn false\n\t}\n", catch: []string{"TestLegal/negative n"}},
		{name: "large allowed", file: "p/p.go", find: "\tif n > 100 {\n\t\treturn false\n\t}\n", catch: []string{"TestLegal/small n"}},
	}
	rs, err := runDeletions(root, ds, 2*time.Minute, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].status != deletionKilled || rs[1].status != deletionLived || !slices.Equal(rs[1].passed, []string{"TestLegal/small n"}) {
		t.Fatalf("results %+v; want the first killed, the second lived (passed by TestLegal/small n)", rs)
	}
	ds[0].catch = []string{"TestLegal/zero"}
	if _, err := runDeletions(root, ds[:1], 2*time.Minute, os.Stderr); err == nil || !strings.Contains(err.Error(), "selects no test") {
		t.Fatalf("a catch naming no test: %v", err)
	}
	ds[0].find = "\treturn true\n\treturn true\n"
	if _, err := runDeletions(root, ds[:1], 2*time.Minute, os.Stderr); err == nil || !strings.Contains(err.Error(), "occurs 0 times") {
		t.Fatalf("a deletion whose text is gone: %v", err)
	}
}
