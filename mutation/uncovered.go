package main

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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

// mutateSource applies m to a whole file. An INVERT_LOGICAL swap is made
// on the syntax tree and the changed expression is put in parentheses, as
// gremlins prints it: in a && b && c the first && belongs to (a && b), so
// its mutant is (a || b) && c, not a || b && c. Every other swap is made on
// the line's text.
func mutateSource(src []byte, m mutant) ([]byte, error) {
	if m.kind == "INVERT_LOGICAL" {
		return invertLogical(src, m)
	}
	lines := strings.Split(string(src), "\n")
	if m.line < 1 || m.line > len(lines) {
		return nil, fmt.Errorf("line %d outside the file", m.line)
	}
	mutated, err := mutateLine(lines[m.line-1], m)
	if err != nil {
		return nil, err
	}
	lines[m.line-1] = mutated
	return []byte(strings.Join(lines, "\n")), nil
}

// invertLogical swaps the && or || at m's position and parenthesizes the
// expression it joins.
func invertLogical(src []byte, m mutant) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, m.file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", m.file, err)
	}
	var found *ast.BinaryExpr
	ast.Inspect(f, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || found != nil {
			return found == nil
		}
		p := fset.Position(b.OpPos)
		if p.Line == m.line && p.Column == m.column && (b.Op == token.LAND || b.Op == token.LOR) {
			found = b
		}
		return true
	})
	if found == nil {
		return nil, fmt.Errorf("no && or || at %d:%d", m.line, m.column)
	}
	start, op, end := fset.Position(found.Pos()).Offset, fset.Position(found.OpPos).Offset, fset.Position(found.End()).Offset
	swap := "||"
	if found.Op == token.LOR {
		swap = "&&"
	}
	out := make([]byte, 0, len(src)+2)
	out = append(out, src[:start]...)
	out = append(out, '(')
	out = append(out, src[start:op]...)
	out = append(out, swap...)
	out = append(out, src[op+2:end]...)
	out = append(out, ')')
	return append(out, src[end:]...), nil
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
	mutated, err := mutateSource(data, m)
	if err != nil {
		return "", err
	}
	file := filepath.Join(tmp, "mutant.go")
	if err := os.WriteFile(file, mutated, 0o600); err != nil {
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
