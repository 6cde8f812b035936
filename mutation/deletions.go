package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// gremlins only swaps operators; it never deletes a statement, drops a
// case or skips a branch. A deletion is such a mutant, named by hand: one
// rule of a checker, or one path by which the rule applies, cut out of its
// source. Each names the tests that must fail without it, so the rule is
// shown to be what rejects each of them (a test that fails for another
// reason would fail with the rule in place too, and does not). The driver
// applies each with go test -overlay, one named test at a time; a deletion
// that one of its tests survives fails the run, and cannot be explained
// away in equivalents.txt.
type deletion struct {
	name string
	file string // relative to the module root
	// find must occur exactly once in file; it is replaced by repl.
	find, repl string
	// catch are tests as go test -v names them, but with spaces as written
	// in t.Run (TestX/sub case/leaf); each must fail with the deletion.
	catch []string
}

// Deletion results.
const (
	deletionKilled = "KILLED"
	deletionLived  = "LIVED"
)

// deletionResult is how one deletion fared: killed when every catch failed.
type deletionResult struct {
	d      deletion
	status string
	passed []string // catches that passed with the rule deleted
}

// apply returns src with the deletion made.
func (d deletion) apply(src []byte) ([]byte, error) {
	if n := strings.Count(string(src), d.find); n != 1 {
		return nil, fmt.Errorf("deletion %q: its text occurs %d times in %s, want once", d.name, n, d.file)
	}
	return []byte(strings.Replace(string(src), d.find, d.repl, 1)), nil
}

// runPattern is the -run pattern that selects exactly test (and its
// subtests): each level anchored and quoted, spaces as go test writes them.
func runPattern(test string) string {
	levels := strings.Split(test, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(strings.ReplaceAll(l, " ", "_")) + "$"
	}
	return strings.Join(levels, "/")
}

// outcome reads go test -v output for the result lines of test and the
// tests below it (a subtest named with a slash, as TestHistoryPairs does,
// has no line of its own for its prefix).
func outcome(out, test string) (failed, ran bool) {
	name := strings.ReplaceAll(test, " ", "_")
	for _, verdict := range []string{"--- FAIL: ", "--- PASS: "} {
		for _, end := range []string{" (", "/"} {
			if strings.Contains(out, verdict+name+end) {
				ran = true
				failed = failed || verdict == "--- FAIL: "
			}
		}
	}
	return failed, ran
}

// runDeletions applies each deletion in dir's package and runs its
// catches there.
func runDeletions(root string, ds []deletion, timeout time.Duration, log io.Writer) ([]deletionResult, error) {
	tmp, err := os.MkdirTemp("", "mutation-deletion-")
	if err != nil {
		return nil, fmt.Errorf("overlay directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	var results []deletionResult
	for _, d := range ds {
		src := filepath.Join(root, d.file)
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("deletion %q: read source: %w", d.name, err)
		}
		mutated, err := d.apply(data)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(tmp, "deletion.go")
		if err := os.WriteFile(file, mutated, 0o600); err != nil {
			return nil, fmt.Errorf("write deletion: %w", err)
		}
		abs, err := filepath.Abs(src)
		if err != nil {
			return nil, fmt.Errorf("source path: %w", err)
		}
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {abs: file}})
		if err != nil {
			return nil, fmt.Errorf("encode overlay: %w", err)
		}
		ov := filepath.Join(tmp, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o600); err != nil {
			return nil, fmt.Errorf("write overlay: %w", err)
		}
		r := deletionResult{d: d, status: deletionKilled}
		for _, test := range d.catch {
			failed, err := runCatch(root, ov, d.file, test, timeout)
			if err != nil {
				return nil, fmt.Errorf("deletion %q: %w", d.name, err)
			}
			if !failed {
				r.status = deletionLived
				r.passed = append(r.passed, test)
			}
		}
		fmt.Fprintf(log, "  deletion %s: %s\n", d.name, r.status)
		results = append(results, r)
	}
	return results, nil
}

// runCatch runs one named test of file's package through the overlay and
// reports whether it failed. A name that selects no test is an error, so a
// renamed test cannot pass for a caught deletion or a lived one.
func runCatch(root, overlay, file, test string, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"test", "-count=1", "-v", "-overlay=" + overlay, "-run", runPattern(test), "./" + filepath.Dir(file)}
	if usesRapid(filepath.Join(root, filepath.Dir(file))) {
		args = append(args, "-args", "-rapid.nofailfile")
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return false, fmt.Errorf("%s timed out after %s", test, timeout)
	}
	text := string(out)
	if strings.Contains(text, "[build failed]") || strings.Contains(text, "[setup failed]") {
		return false, fmt.Errorf("does not build:\n%s", text)
	}
	failed, ran := outcome(text, test)
	if !ran {
		return false, fmt.Errorf("%s selects no test (go test: %v)", test, err)
	}
	return failed, nil
}

// deletionsIn is the deletions of files.
func deletionsIn(files []string) []deletion {
	var out []deletion
	for _, d := range deletions {
		for _, f := range files {
			if d.file == f {
				out = append(out, d)
				break
			}
		}
	}
	return out
}
