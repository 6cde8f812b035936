package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gremlins v0.6.0 reports every condition of a tagless switch's case clause
// as NOT COVERED, because Go's coverage profile gives case conditions no
// counter of their own (go-gremlins/gremlins#298). Those mutants are run here
// instead: the driver applies the same operator swap to a copy of the file
// and runs the package's tests on it through `go test -overlay`, leaving the
// tree untouched.

// swaps is each mutator's replacement for the operator at the mutant's column.
var swaps = map[string]map[string]string{
	"CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"},
	"CONDITIONALS_BOUNDARY": {"<": "<=", "<=": "<", ">": ">=", ">=": ">"},
	"INVERT_LOGICAL":        {"&&": "||", "||": "&&"},
	"ARITHMETIC_BASE":       {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
	"INVERT_NEGATIVES":      {"-": "+"},
}

// inCaseClause reports whether gremlins cannot map m to coverage because it
// sits in a case clause's condition.
func inCaseClause(m mutant) bool {
	return m.status == statusNotCovered && strings.HasPrefix(m.text, "case ")
}

// mutateLine applies m's operator swap at its column (1-based, in bytes of
// the untrimmed line) and returns the new line.
func mutateLine(line string, m mutant) (string, error) {
	table, ok := swaps[m.kind]
	if !ok {
		return "", fmt.Errorf("no swap for mutator %s", m.kind)
	}
	at := m.column - 1
	if at < 0 || at >= len(line) {
		return "", fmt.Errorf("column %d outside the line", m.column)
	}
	// Longest operator first, so "<=" is not read as "<".
	for _, width := range []int{2, 1} {
		if at+width > len(line) {
			continue
		}
		if repl, ok := table[line[at:at+width]]; ok {
			return line[:at] + repl + line[at+width:], nil
		}
	}
	return "", fmt.Errorf("no %s operator at column %d of %q", m.kind, m.column, line)
}

// runCaseClauseMutants re-runs the case-clause mutants of ms with the package's
// own tests and returns ms with their status settled.
func runCaseClauseMutants(root string, ms []mutant, timeout time.Duration, log io.Writer) ([]mutant, error) {
	tmp, err := os.MkdirTemp("", "mutation-overlay-")
	if err != nil {
		return nil, fmt.Errorf("overlay directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := append([]mutant(nil), ms...)
	for i, m := range out {
		if !inCaseClause(m) {
			continue
		}
		status, err := runOverlayMutant(root, tmp, m, timeout)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		fmt.Fprintf(log, "  case clause %s:%d:%d %s: %s\n", m.file, m.line, m.column, m.kind, status)
		out[i].status = status
	}
	return out, nil
}

// usesRapid reports whether the package in dir has tests on pgregory.net/rapid.
func usesRapid(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), `"pgregory.net/rapid"`) {
			return true
		}
	}
	return false
}

func runOverlayMutant(root, tmp string, m mutant, timeout time.Duration) (string, error) {
	src := filepath.Join(root, m.file)
	data, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("read source: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	mutated, err := mutateLine(lines[m.line-1], m)
	if err != nil {
		return "", err
	}
	lines[m.line-1] = mutated
	file := filepath.Join(tmp, "mutant.go")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		return "", fmt.Errorf("write mutant: %w", err)
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", fmt.Errorf("source path: %w", err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {abs: file}})
	if err != nil {
		return "", fmt.Errorf("encode overlay: %w", err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		return "", fmt.Errorf("write overlay: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"test", "-count=1", "-overlay=" + ov, "./" + filepath.Dir(m.file)}
	if usesRapid(filepath.Join(root, filepath.Dir(m.file))) {
		// A property test that fails on a mutant would otherwise leave
		// its failure file in the package's testdata.
		args = append(args, "-args", "-rapid.nofailfile")
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	outText, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		return statusTimedOut, nil
	case err == nil:
		return statusLived, nil
	case strings.Contains(string(outText), "[build failed]") || strings.Contains(string(outText), "[setup failed]"):
		return statusNotViable, nil
	default:
		return statusKilled, nil
	}
}
