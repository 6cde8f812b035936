package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

// summary adds up seeds' result lines: what a long run, or the merge of
// its shards, prints at the end.
type summary struct {
	times   map[uint64]int // how many lines each seed has
	failed  map[uint64]seedlog.Line
	virtual time.Duration
	wall    time.Duration // summed over seeds: process time
	judged  map[string]int
	caught  map[string]int // violations per check
	seedsBy map[string]int // failing seeds per check
	table   *checks.Tradeoff
}

func newSummary() *summary {
	return &summary{times: map[uint64]int{}, failed: map[uint64]seedlog.Line{}, judged: map[string]int{},
		caught: map[string]int{}, seedsBy: map[string]int{}, table: checks.NewTradeoff()}
}

func (s *summary) add(l seedlog.Line) {
	s.times[l.Seed]++
	s.virtual += l.Virtual
	s.wall += l.Wall
	for c, n := range l.Judged {
		s.judged[c] += n
	}
	for c, n := range l.Caught {
		s.caught[c] += n
		s.seedsBy[c]++
	}
	if l.Violations > 0 {
		s.failed[l.Seed] = l
	}
	s.table.AddCells(l.Tradeoff, 1)
}

// done is how many distinct seeds finished.
func (s *summary) done() int { return len(s.times) }

// overlapping lists seeds with more than one result line.
func (s *summary) overlapping() []uint64 {
	var out []uint64
	for seed, n := range s.times {
		if n > 1 {
			out = append(out, seed)
		}
	}
	slices.Sort(out)
	return out
}

// missing lists the seeds of first..last that have no result line.
func (s *summary) missing(first, last uint64) []uint64 {
	var out []uint64
	for seed := first; seed <= last && seed >= first; seed++ {
		if s.times[seed] == 0 {
			out = append(out, seed)
		}
	}
	return out
}

// span is the lowest and highest seed seen.
func (s *summary) span() (lo, hi uint64) {
	seeds := slices.Sorted(maps.Keys(s.times))
	if len(seeds) == 0 {
		return 0, 0
	}
	return seeds[0], seeds[len(seeds)-1]
}

// print writes the summary. elapsed is the run's wall time (0 when
// unknown, as for a merge of shards run apart): seeds per minute then
// counts process time, which adds up across machines.
func (s *summary) print(w io.Writer, elapsed time.Duration) {
	lo, hi := s.span()
	fmt.Fprintf(w, "SUMMARY: %d seeds (%d…%d), %d with violations\n", s.done(), lo, hi, len(s.failed))
	if elapsed > 0 {
		fmt.Fprintf(w, "  %.1f seeds per minute (%v of wall time)\n", float64(s.done())/elapsed.Minutes(), elapsed.Round(time.Second))
	}
	if s.wall > 0 {
		fmt.Fprintf(w, "  %.1f seeds per process-minute; speed %.0f× real time (virtual %v over %v of process time)\n",
			float64(s.done())/s.wall.Minutes(), s.virtual.Seconds()/s.wall.Seconds(), s.virtual.Round(time.Second), s.wall.Round(time.Second))
	}
	if len(s.caught) > 0 {
		var parts []string
		for _, c := range slices.SortedFunc(maps.Keys(s.caught), func(a, b string) int {
			return cmp.Or(cmp.Compare(s.seedsBy[b], s.seedsBy[a]), strings.Compare(a, b))
		}) {
			parts = append(parts, fmt.Sprintf("%s %d in %d seeds", c, s.caught[c], s.seedsBy[c]))
		}
		fmt.Fprintf(w, "  violations by check: %s\n", strings.Join(parts, "; "))
	}
	if len(s.judged) > 0 {
		var parts, idle []string
		for _, c := range slices.Sorted(maps.Keys(s.judged)) {
			if s.judged[c] == 0 {
				idle = append(idle, c)
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %d", c, s.judged[c]))
		}
		fmt.Fprintf(w, "  observations judged per check: %s\n", strings.Join(parts, ", "))
		if len(idle) > 0 {
			fmt.Fprintf(w, "  not exercised in any seed: %s\n", strings.Join(idle, ", "))
		}
	}
}

// printFailed lists each failing seed with its first violations, replay
// command and artifacts.
func (s *summary) printFailed(w io.Writer) {
	for _, seed := range slices.Sorted(maps.Keys(s.failed)) {
		l := s.failed[seed]
		fmt.Fprintf(w, "FAILED seed %d: %d violations\n", seed, l.Violations)
		for _, v := range l.First {
			fmt.Fprintf(w, "  %s\n", v)
		}
		fmt.Fprintf(w, "  replay: GOMAXPROCS=1 %s\n  artifacts: sim/%s\n", l.Replay, l.Artifacts)
	}
}

// ranges prints seeds compactly: "3, 5-9, 12".
func ranges(seeds []uint64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(seeds[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
