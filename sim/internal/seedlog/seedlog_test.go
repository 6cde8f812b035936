package seedlog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	in := []Line{
		{Seed: 1, Events: 10, Virtual: 90 * time.Second, Wall: time.Second, Digest: "ab", Lin: "ok", Ops: 5},
		{Seed: 2, Violations: 1, First: []string{"liveness (S14) at 1s: x"}, Replay: "go test ./sim -seed 2", Artifacts: "d"},
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
	if len(out) != 2 || out[0].Virtual != in[0].Virtual || out[0].Wall != in[0].Wall || out[1].First[0] != in[1].First[0] || out[1].Replay != in[1].Replay {
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
