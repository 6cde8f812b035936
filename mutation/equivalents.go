package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// equivalent explains why a surviving mutant is harmless or out of reach:
// every mutant of kind on a line of file whose trimmed text is text.
type equivalent struct {
	file, kind, text, reason string
	lineNo                   int // in equivalents.txt, for error messages
}

func (e equivalent) matches(m mutant) bool {
	return e.file == m.file && e.kind == m.kind && e.text == m.text
}

// parseEquivalents reads equivalents.txt: one entry a line,
//
//	file | MUTATOR | source line text | reason
//
// Blank lines and lines starting with # are comments.
func parseEquivalents(r io.Reader) ([]equivalent, error) {
	var out []equivalent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, " | ")
		if len(parts) != 4 {
			return nil, fmt.Errorf("equivalents line %d: want 'file | MUTATOR | source text | reason', got %d fields", n, len(parts))
		}
		e := equivalent{file: parts[0], kind: parts[1], text: parts[2], reason: parts[3], lineNo: n}
		for _, f := range parts {
			if strings.TrimSpace(f) == "" {
				return nil, fmt.Errorf("equivalents line %d: empty field", n)
			}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read equivalents: %w", err)
	}
	return out, nil
}

// triage splits the survivors into explained and unexplained ones and
// returns the entries that matched nothing (stale). Entries for files outside
// the mutated set (a target not run) are not stale.
func triage(ms []mutant, eqs []equivalent, mutatedFiles map[string]bool) (unexplained []mutant, stale []equivalent) {
	used := make([]bool, len(eqs))
	for _, m := range ms {
		if !m.survived() {
			continue
		}
		found := false
		for i, e := range eqs {
			if e.matches(m) {
				used[i], found = true, true
			}
		}
		if !found {
			unexplained = append(unexplained, m)
		}
	}
	for i, e := range eqs {
		if !used[i] && mutatedFiles[e.file] {
			stale = append(stale, e)
		}
	}
	return unexplained, stale
}
