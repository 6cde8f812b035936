package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

// expected is the seed range a merge should cover; ok is false when the
// user named none (the merge then checks first seen…last seen).
type expected struct {
	first uint64
	seeds int
	ok    bool
}

// merge reads the result files of a run's shards (each shard's
// results.jsonl), prints their combined summary and failing seeds to w,
// and, with out set, writes the summary and the trade-off plot there. Its
// error names seeds run twice or not at all, and failing seeds.
func merge(w io.Writer, files []string, want expected, out string) error {
	if len(files) == 0 {
		return errors.New("-merge: name the result files to merge (each shard's results.jsonl)")
	}
	s := newSummary()
	for _, name := range files {
		if err := readResults(name, s); err != nil {
			return err
		}
	}
	first, last := s.span()
	if want.ok {
		first, last = want.first, want.first+uint64(want.seeds)-1
	}
	var errs []error
	if o := s.overlapping(); len(o) > 0 {
		errs = append(errs, fmt.Errorf("seeds with more than one result (a shard run twice, or shards that overlap): %s", ranges(o)))
	}
	if m := s.missing(first, last); s.done() > 0 && len(m) > 0 {
		errs = append(errs, fmt.Errorf("seeds %d…%d without a result (a shard missing or cut short): %s", first, last, ranges(m)))
	}
	if s.done() == 0 {
		errs = append(errs, errors.New("the result files hold no seeds"))
	}
	if err := writeSummary(w, s, 0, out); err != nil {
		errs = append(errs, err)
	}
	if len(s.failed) > 0 {
		errs = append(errs, fmt.Errorf("%d failing seeds", len(s.failed)))
	}
	return errors.Join(errs...)
}

// readResults adds one results file's lines to s.
func readResults(name string, s *summary) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("-merge: %w", err)
	}
	defer f.Close()
	if err := seedlog.Read(f, s.add); err != nil {
		return fmt.Errorf("-merge %s: %w", name, err)
	}
	return nil
}

// writeSummary prints s and its failing seeds to w and, with out set, writes
// summary.txt and tradeoff.svg there.
func writeSummary(w io.Writer, s *summary, elapsed time.Duration, out string) error {
	s.printFailed(w)
	s.print(w, elapsed)
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	f, err := os.Create(filepath.Join(out, "summary.txt"))
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	s.printFailed(f)
	s.print(f, elapsed)
	s.table.Print(f)
	if err := f.Close(); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	svg, err := os.Create(filepath.Join(out, "tradeoff.svg"))
	if err != nil {
		return fmt.Errorf("trade-off plot: %w", err)
	}
	err = s.table.WriteSVG(svg)
	if cerr := svg.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("trade-off plot: %w", cerr)
	}
	if err == nil {
		fmt.Fprintf(w, "  summary, trade-off table and plot: %s\n", out)
	}
	return err
}
