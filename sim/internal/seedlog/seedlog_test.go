package seedlog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	in := []Line{
		{Seed: 1, Events: 10, Virtual: 90 * time.Second, Digest: "ab", Lin: "ok", Ops: 5},
		{Seed: 2, Violations: 1, First: []string{"liveness (S14) at 1s: x"}, Replay: "go test ./sim -seed 2", Artifacts: "d",
			Wall: time.Second, Judged: map[string]int{"liveness": 4, "ttl-lower-bound": 0}, Caught: map[string]int{"liveness": 1},
			Tradeoff: []TradeoffCell{{Group: "ttl", Fault: "partition", Faults: 1, Recovered: 1, RecoverySum: time.Second, RecoveryMax: time.Second}}},
	}
	var buf bytes.Buffer
	for _, l := range in {
		if err := Write(&buf, l); err != nil {
			t.Fatal(err)
		}
	}
	var out []Line
	if err := Read(&buf, func(l Line) { out = append(out, l) }); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Virtual != in[0].Virtual || out[1].First[0] != in[1].First[0] || out[1].Replay != in[1].Replay ||
		out[1].Wall != time.Second || out[1].Judged["liveness"] != 4 || len(out[1].Judged) != 2 || out[1].Caught["liveness"] != 1 ||
		len(out[1].Tradeoff) != 1 || out[1].Tradeoff[0] != in[1].Tradeoff[0] {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
}

// TestReadRejectsGarbage: output that is not a result line is an error,
// not a silently skipped seed.
func TestReadRejectsGarbage(t *testing.T) {
	err := Read(strings.NewReader("{\"seed\":1}\n--- FAIL: TestSeeds\n"), func(Line) {})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v, want an error naming line 2", err)
	}
}

// TestTradeoffCellAdd: counts add up, the longest recovery is the longest.
func TestTradeoffCellAdd(t *testing.T) {
	c := TradeoffCell{Faults: 1, Recovered: 1, RecoverySum: 2 * time.Second, RecoveryMax: 2 * time.Second, Stale: 1}
	c.Add(TradeoffCell{Faults: 2, Recovered: 1, RecoverySum: time.Second, RecoveryMax: time.Second, Never: 1, Overlaps: 2, FenceRejects: 3})
	want := TradeoffCell{Faults: 3, Recovered: 2, RecoverySum: 3 * time.Second, RecoveryMax: 2 * time.Second, Never: 1, Stale: 1, Overlaps: 2, FenceRejects: 3}
	if c != want {
		t.Fatalf("sum %+v, want %+v", c, want)
	}
}
