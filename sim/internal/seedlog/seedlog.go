// Package seedlog is the structured result of one simulator seed, written as
// one JSON line by sim's TestSeeds (-results) and read by sim/cmd/simlong,
// so that the long runner never parses test output.
package seedlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Line is one finished seed.
type Line struct {
	Seed    uint64        `json:"seed"`
	Events  int           `json:"events"`
	Virtual time.Duration `json:"virtual_ns"`
	Digest  string        `json:"digest"`
	// Violations is how many checks failed; First holds at most MaxFirst
	// of them, formatted.
	Violations int      `json:"violations"`
	First      []string `json:"first,omitempty"`
	Lin        string   `json:"lin"`
	Ops        int      `json:"ops"`
	Excused    int      `json:"excused"`
	Replay     string   `json:"replay,omitempty"`
	Artifacts  string   `json:"artifacts,omitempty"`
	// Wall is the seed's wall time, run and checks, for a summary's speed.
	Wall time.Duration `json:"wall_ns"`
	// Judged is how many observations each check judged (a check at 0 was
	// not exercised); Caught, how many violations each failing check found.
	Judged map[string]int `json:"judged,omitempty"`
	Caught map[string]int `json:"caught,omitempty"`
	// Tradeoff is the seed's share of the trade-off table, so that a long
	// run, or the merge of its shards, can add the table up.
	Tradeoff []TradeoffCell `json:"tradeoff,omitempty"`
}

// TradeoffCell is one (session configuration, fault kind) cell of the
// trade-off table (sim/internal/checks' Tradeoff), summed over runs.
type TradeoffCell struct {
	Group string `json:"group"`
	Fault string `json:"fault"`
	// Faults counts occurrences of the fault kind.
	Faults int `json:"faults"`
	// Stale counts unfenced-resource writes made after the writer's holding
	// had ended on the servers: the safety violations a fence would stop.
	Stale int `json:"stale,omitempty"`
	// Overlaps counts unfenced writes whose lock index is below one the
	// resource had already seen: two holders' writes interleaved.
	Overlaps int `json:"overlaps,omitempty"`
	// FenceRejects counts writes the fenced resource refused.
	FenceRejects int `json:"fence_rejects,omitempty"`
	// Recovered, RecoverySum and RecoveryMax: time from the fault's end
	// until the group's key was next acquired; Never counts faults after
	// which it was not acquired before the run ended.
	Recovered   int           `json:"recovered,omitempty"`
	RecoverySum time.Duration `json:"recovery_sum_ns,omitempty"`
	RecoveryMax time.Duration `json:"recovery_max_ns,omitempty"`
	Never       int           `json:"never,omitempty"`
}

// Add adds o's counts to c (the same cell of another run).
func (c *TradeoffCell) Add(o TradeoffCell) {
	c.Faults += o.Faults
	c.Stale += o.Stale
	c.Overlaps += o.Overlaps
	c.FenceRejects += o.FenceRejects
	c.Recovered += o.Recovered
	c.RecoverySum += o.RecoverySum
	c.RecoveryMax = max(c.RecoveryMax, o.RecoveryMax)
	c.Never += o.Never
}

// MaxFirst bounds Line.First, so that one line stays small.
const MaxFirst = 10

// Write appends l to w as one JSON line.
func Write(w io.Writer, l Line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("seed %d: encode result: %w", l.Seed, err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("seed %d: write result: %w", l.Seed, err)
	}
	return nil
}

// Read calls fn for each line of r until r ends. A line that does not
// decode is an error: the writer is this module's own test.
func Read(r io.Reader, fn func(Line)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("result line %d: %w", n, err)
		}
		fn(l)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	return nil
}
