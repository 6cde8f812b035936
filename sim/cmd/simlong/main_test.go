package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

// TestShardsCoverEverySeedOnce: across K = 0…N-1 every seed of the range
// is in exactly one shard, each shard contiguous, sizes within one.
func TestShardsCoverEverySeedOnce(t *testing.T) {
	for _, seeds := range []int{1, 2, 7, 100, 1001} {
		for n := 1; n <= 9; n++ {
			const first = 42
			hits := make([]int, seeds)
			lo, hi := seeds, 0
			for k := range n {
				from, c := shard{k, n}.of(first, seeds)
				lo, hi = min(lo, c), max(hi, c)
				for s := from; s < from+uint64(c); s++ {
					hits[s-first]++
				}
			}
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("%d seeds in %d shards: seed %d in %d shards", seeds, n, first+i, h)
				}
			}
			if hi-lo > 1 {
				t.Fatalf("%d seeds in %d shards: sizes from %d to %d", seeds, n, lo, hi)
			}
		}
	}
}

// TestParseShard: K/N with K from 0; anything else is a one-line error
// that says what is wanted.
func TestParseShard(t *testing.T) {
	for in, want := range map[string]shard{"0/1": {0, 1}, "3/4": {3, 4}, " 2 / 8": {2, 8}} {
		if got, err := parseShard(in); err != nil || got != want {
			t.Errorf("parseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3", "4/4", "-1/4", "1/0", "a/2", "1/b", "1/2/3"} {
		_, err := parseShard(in)
		if err == nil || !strings.Contains(err.Error(), "want K/N") || strings.Contains(err.Error(), "\n") {
			t.Errorf("parseShard(%q): %v, want a one-line error saying what is wanted", in, err)
		}
	}
}

// resultsFile writes one result line per seed, seed bad failing
// lock-delay twice, and returns its path.
func resultsFile(t *testing.T, name string, from, to, bad uint64) string {
	t.Helper()
	var buf bytes.Buffer
	for s := from; s <= to; s++ {
		l := seedlog.Line{Seed: s, Virtual: 90 * time.Second, Wall: time.Second, Lin: "ok",
			Judged: map[string]int{"lock-delay": 3, "stops-on-failed-fsync": 0},
			Tradeoff: []seedlog.TradeoffCell{{Group: "ttl/ld=15s", Fault: "partition", Faults: 1, Recovered: 1,
				RecoverySum: 4 * time.Second, RecoveryMax: 4 * time.Second}}}
		if s == bad {
			l.Violations, l.Caught, l.Replay, l.Artifacts = 2, map[string]int{"lock-delay": 2}, "go test ./sim -seed 5", "testdata/artifacts/seed-5"
		}
		if err := seedlog.Write(&buf, l); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMerge: shards' results add up to one summary (seeds, violations by
// check, checks never exercised, speed), written with the trade-off plot
// to -out; a failing seed fails the merge.
func TestMerge(t *testing.T) {
	a, b := resultsFile(t, "a.jsonl", 1, 3, 0), resultsFile(t, "b.jsonl", 4, 6, 5)
	out := filepath.Join(t.TempDir(), "merged")
	var w bytes.Buffer
	err := merge(&w, []string{a, b}, expected{}, out)
	if err == nil || !strings.Contains(err.Error(), "1 failing seeds") {
		t.Fatalf("merge error %v, want the failing seed", err)
	}
	got := w.String()
	for _, want := range []string{"SUMMARY: 6 seeds (1…6), 1 with violations", "60.0 seeds per process-minute", "speed 90× real time",
		"violations by check: lock-delay 2 in 1 seeds", "lock-delay 18", "not exercised in any seed: stops-on-failed-fsync",
		"FAILED seed 5", "replay: GOMAXPROCS=1 go test ./sim -seed 5"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	for _, f := range []string{"summary.txt", "tradeoff.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("merge -out: %v", err)
		}
	}
}

// TestMergeFindsOverlapsAndGaps: a seed in two shards, or in none, is an
// error naming the seeds.
func TestMergeFindsOverlapsAndGaps(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []string
		want  expected
		error string
	}{
		{"overlap", []string{resultsFile(t, "a", 1, 3, 0), resultsFile(t, "b", 3, 5, 0)}, expected{}, "more than one result (a shard run twice, or shards that overlap): 3"},
		{"twice", []string{resultsFile(t, "a", 1, 3, 0), resultsFile(t, "a", 1, 3, 0)}, expected{}, "more than one result (a shard run twice, or shards that overlap): 1-3"},
		{"gap", []string{resultsFile(t, "a", 1, 3, 0), resultsFile(t, "b", 6, 7, 0)}, expected{}, "seeds 1…7 without a result (a shard missing or cut short): 4-5"},
		{"short", []string{resultsFile(t, "a", 1, 3, 0)}, expected{first: 1, seeds: 5, ok: true}, "seeds 1…5 without a result (a shard missing or cut short): 4-5"},
		{"none", nil, expected{}, "name the result files"},
	} {
		err := merge(&bytes.Buffer{}, c.files, c.want, "")
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: merge error %v, want %q", c.name, err, c.error)
		}
	}
	if err := merge(&bytes.Buffer{}, []string{resultsFile(t, "a", 1, 3, 0), resultsFile(t, "b", 4, 5, 0)}, expected{}, ""); err != nil {
		t.Errorf("clean shards: %v", err)
	}
}
