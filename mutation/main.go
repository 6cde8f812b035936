package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mutation", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "", "comma-separated target names to run (default: all)")
	workers := fs.Int("workers", 2, "gremlins workers")
	coefficient := fs.Int("timeout-coefficient", 10, "gremlins timeout coefficient (see doc.go: #267)")
	caseClauses := fs.Bool("case-clauses", true, "run the case-clause mutants gremlins cannot map to coverage (gremlins#298) with go test -overlay")
	onlyDeletions := fs.Bool("deletions-only", false, "run only the named deletion mutants (deletionlist.go), not gremlins")
	eqPath := fs.String("equivalents", "mutation/equivalents.txt", "the explained survivors")
	out := fs.String("out", "bin/mutation", "directory for gremlins' JSON reports and the summary (report.txt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	eqFile, err := os.Open(*eqPath)
	if err != nil {
		return fmt.Errorf("open equivalents: %w", err)
	}
	eqs, err := parseEquivalents(eqFile)
	eqFile.Close()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o750); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	var chosen []target
	for _, t := range targets {
		if *only == "" || slices.Contains(strings.Split(*only, ","), t.name) {
			chosen = append(chosen, t)
		}
	}
	if len(chosen) == 0 {
		return fmt.Errorf("no target named %q", *only)
	}

	var all []mutant
	var dels []deletionResult
	mutated := map[string]bool{}
	rows := map[string]tally{}
	var errs []error
	start := time.Now()
	for i, t := range chosen {
		fmt.Fprintf(stderr, "[%d/%d] %s: mutating (%s elapsed)\n", i+1, len(chosen), t.name, time.Since(start).Round(time.Second))
		tStart := time.Now()
		var (
			ms    []mutant
			files []string
		)
		if *onlyDeletions {
			files, err = targetFiles(root, t)
		} else {
			ms, files, err = runTarget(root, t, *workers, *coefficient, *caseClauses, filepath.Join(*out, t.name+".json"), stderr)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		rs, err := runDeletions(root, deletionsIn(files), 5*time.Minute, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		dels = append(dels, rs...)
		for _, f := range files {
			mutated[f] = true
		}
		row := count(ms)
		rows[t.name] = row
		if row.killed+row.lived == 0 && row.timedOut > 0 {
			errs = append(errs, fmt.Errorf("%s: every covered mutant timed out; raise -timeout-coefficient (gremlins#267)", t.name))
		}
		fmt.Fprintf(stderr, "[%d/%d] %s: %d mutants in %s\n", i+1, len(chosen), t.name, len(ms), time.Since(tStart).Round(time.Second))
		all = append(all, ms...)
	}

	summary, err := os.Create(filepath.Join(*out, "report.txt"))
	if err != nil {
		return fmt.Errorf("create summary: %w", err)
	}
	defer summary.Close()
	stdout = io.MultiWriter(stdout, summary)
	unexplained, stale := triage(all, eqs, mutated)
	if *onlyDeletions {
		// No gremlins mutants: nothing to triage, and every entry would
		// look stale.
		unexplained, stale = nil, nil
	}
	if !*onlyDeletions {
		printTable(stdout, chosen, rows, all, eqs)
	}
	lived := printDeletions(stdout, dels)
	fmt.Fprintf(stdout, "took %s\n", time.Since(start).Round(time.Second))
	for _, m := range unexplained {
		fmt.Fprintf(stdout, "UNEXPLAINED %s\n", m)
	}
	for _, e := range stale {
		fmt.Fprintf(stdout, "STALE equivalents.txt:%d %s %s %q (matches no surviving mutant)\n", e.lineNo, e.file, e.kind, e.text)
	}
	if len(unexplained) > 0 {
		errs = append(errs, fmt.Errorf("%d surviving mutants are neither killed nor explained in %s", len(unexplained), *eqPath))
	}
	if len(stale) > 0 {
		errs = append(errs, fmt.Errorf("%d stale entries in %s", len(stale), *eqPath))
	}
	if lived > 0 {
		errs = append(errs, fmt.Errorf("%d deletion mutants lived: a named test passed without its rule", lived))
	}
	return errors.Join(errs...)
}

// runTarget runs gremlins on one package with that package's own tests and
// returns its mutants and the files that were mutated.
func runTarget(root string, t target, workers, coefficient int, caseClauses bool, report string, stderr io.Writer) ([]mutant, []string, error) {
	args := []string{"tool", "gremlins", "unleash", "--silent",
		"--workers", fmt.Sprint(workers), "--timeout-coefficient", fmt.Sprint(coefficient),
		"--invert-logical", "--invert-loopctrl", "--remove-self-assignments",
		"-o", report}
	mutated, excludes, err := listTarget(root, t)
	if err != nil {
		return nil, nil, err
	}
	args = append(args, excludes...)
	args = append(args, "./"+t.dir)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		return nil, nil, fmt.Errorf("read gremlins report: %w", err)
	}
	ms, err := readReport(data, root, t.dir)
	if err != nil {
		return nil, nil, err
	}
	if caseClauses {
		if ms, err = runCaseClauseMutants(root, ms, 5*time.Minute, stderr); err != nil {
			return nil, nil, err
		}
	}
	return ms, mutated, nil
}

func printTable(w io.Writer, chosen []target, rows map[string]tally, all []mutant, eqs []equivalent) {
	fmt.Fprintf(w, "| package | killed | lived | not covered | timed out | efficacy | coverage | explained |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	for _, t := range chosen {
		r := rows[t.name]
		explained := 0
		for _, m := range all {
			if !m.survived() || !strings.HasPrefix(m.file, t.dir+"/") {
				continue
			}
			for _, e := range eqs {
				if e.matches(m) {
					explained++
					break
				}
			}
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %.2f %% | %.2f %% | %d of %d |\n",
			t.name, r.killed, r.lived, r.notCovered, r.timedOut, r.efficacy(), r.coverage(), explained, r.lived+r.notCovered)
	}
}

// listTarget returns the files target t mutates and the gremlins -E
// arguments that keep it to them.
func listTarget(root string, t target) (mutated, excludes []string, err error) {
	entries, err := os.ReadDir(filepath.Join(root, t.dir))
	if err != nil {
		return nil, nil, fmt.Errorf("list package files: %w", err)
	}
	for _, e := range entries {
		base := e.Name()
		if e.IsDir() {
			// gremlins mutates the whole tree below its argument; a narrowed
			// target keeps to its own directory.
			if t.files != nil {
				excludes = append(excludes, "-E", "^"+regexp.QuoteMeta(base)+"/")
			}
			continue
		}
		if !strings.HasSuffix(base, ".go") || strings.HasSuffix(base, "_test.go") {
			continue
		}
		if t.files != nil && !slices.Contains(t.files, base) {
			// gremlins matches -E against the path below the package.
			excludes = append(excludes, "-E", "^"+regexp.QuoteMeta(base)+"$")
			continue
		}
		mutated = append(mutated, filepath.ToSlash(filepath.Join(t.dir, base)))
	}
	return mutated, excludes, nil
}

// targetFiles is the files target t mutates.
func targetFiles(root string, t target) ([]string, error) {
	files, _, err := listTarget(root, t)
	return files, err
}

// printDeletions writes each deletion's result and returns how many lived.
func printDeletions(w io.Writer, rs []deletionResult) int {
	if len(rs) == 0 {
		return 0
	}
	lived := 0
	fmt.Fprintf(w, "\n| deletion | file | status |\n|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.d.name, r.d.file, r.status)
	}
	for _, r := range rs {
		if r.status == deletionLived {
			lived++
			fmt.Fprintf(w, "LIVED deletion %q (%s): passed %s\n", r.d.name, r.d.file, strings.Join(r.passed, ", "))
		}
	}
	fmt.Fprintf(w, "deletions: %d of %d killed\n", len(rs)-lived, len(rs))
	return lived
}
