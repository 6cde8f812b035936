package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// Flags of the divergence finder (TestDiverge).
var (
	flagDiverge     = flag.Bool("diverge", false, "TestDiverge: run -seed until two runs differ and print where")
	flagDivergeNet  = flag.Bool("diverge-net", true, "TestDiverge: record every network message in the traces compared")
	flagDivergeCtx  = flag.Int("diverge-context", 12, "TestDiverge: events of context printed around the first difference")
	flagDivergeMax  = flag.Int("diverge-runs", 10, "TestDiverge: give up after this many runs that all match the first")
	flagDivergeGrep = flag.String("diverge-grep", "", "TestDiverge: also print each run's events matching this regexp from the difference on (up to -diverge-context×4)")
)

// TestDiverge runs one seed at GOMAXPROCS=1 until a run's trace differs
// from the first run's, and prints the first event where they part, with
// context from both: the tool for finding what makes a seed not replay.
// Traces are compared as Digest hashes them (events at one virtual instant
// in a canonical order), with the network messages recorded too by
// default (-diverge-net), so the first difference is usually a gossip or
// raft message, long before a client sees one.
//
//	go test ./sim -run 'TestDiverge$' -v -diverge -seed 1
func TestDiverge(t *testing.T) {
	if !*flagDiverge {
		t.Skip("only with -diverge")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = 1
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	cfg := configFromFlags(t, seed)
	cfg.NetTrace = *flagDivergeNet
	first := canonicalLines(runSeed(t, cfg).Events)
	for run := 1; run < *flagDivergeMax; run++ {
		other := canonicalLines(runSeed(t, cfg).Events)
		d, ok := firstDifference(first, other)
		if !ok {
			t.Logf("run %d: identical (%d events)", run+1, len(other))
			continue
		}
		t.Logf("seed %d: run %d differs from run 1 at canonical event %d of %d/%d (virtual %v)\n%s",
			seed, run+1, d.index, len(first), len(other), d.at, d.context(*flagDivergeCtx))
		if *flagDivergeGrep != "" {
			re := regexp.MustCompile(*flagDivergeGrep)
			t.Logf("events matching %q from the difference on:\n  run 1:\n%s  other:\n%s", *flagDivergeGrep,
				grepFrom(first, d.index, re, 4**flagDivergeCtx), grepFrom(other, d.index, re, 4**flagDivergeCtx))
		}
		return
	}
	t.Logf("seed %d: %d runs, all identical", seed, *flagDivergeMax)
}

// canonicalLine is one event as Digest hashes it, with its instant.
type canonicalLine struct {
	at   time.Duration
	line string
}

var (
	linkSeqRE = regexp.MustCompile(` #[0-9]+ `)
	// A dialer's local port (40000 on, five digits; listening ports have
	// four) counts its node's dials (simnet), in the order
	// goroutines dialed at one instant; nothing is drawn from it.
	localPortRE = regexp.MustCompile(`:[0-9]{5}\b`)
)

// canonicalLines orders events as Digest does: by instant, then by their
// encoding, so the order of events within one instant does not count.
func canonicalLines(events []core.Event) []canonicalLine {
	out := make([]canonicalLine, len(events))
	for i, e := range events {
		e.Seq = 0
		if e.Kind == core.KindNet {
			// A message's number on its link counts the sends before it,
			// in the order goroutines ran; its draws do not depend on it.
			e.Msg = linkSeqRE.ReplaceAllString(e.Msg, " ")
			e.Msg = localPortRE.ReplaceAllString(e.Msg, ":port")
		}
		b, err := json.Marshal(e)
		if err != nil {
			b = []byte("unencodable: " + err.Error())
		}
		out[i] = canonicalLine{at: e.At, line: string(b)}
	}
	slices.SortStableFunc(out, func(a, b canonicalLine) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return strings.Compare(a.line, b.line)
	})
	return out
}

// difference is where two canonical traces part.
type difference struct {
	index int
	at    time.Duration
	a, b  []canonicalLine
}

func firstDifference(a, b []canonicalLine) (difference, bool) {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return difference{}, false
	}
	d := difference{index: i, a: a, b: b}
	switch {
	case i < len(a) && i < len(b):
		d.at = min(a[i].at, b[i].at)
	case i < len(a):
		d.at = a[i].at
	default:
		d.at = b[i].at
	}
	return d, true
}

// context prints k events before the difference (common to both) and k
// after it from each run.
func (d difference) context(k int) string {
	var buf bytes.Buffer
	for i := max(0, d.index-k); i < d.index; i++ {
		fmt.Fprintf(&buf, "  = %s\n", shorten(d.a[i].line))
	}
	for _, side := range []struct {
		name  string
		lines []canonicalLine
	}{{"run 1", d.a}, {"other", d.b}} {
		fmt.Fprintf(&buf, "  %s:\n", side.name)
		for i := d.index; i < min(len(side.lines), d.index+k); i++ {
			fmt.Fprintf(&buf, "  %s %s\n", map[bool]string{true: "≠", false: " "}[i == d.index], shorten(side.lines[i].line))
		}
	}
	return buf.String()
}

// grepFrom prints up to k of lines[from:] that match re.
func grepFrom(lines []canonicalLine, from int, re *regexp.Regexp, k int) string {
	var buf bytes.Buffer
	for i := from; i < len(lines) && k > 0; i++ {
		if re.MatchString(lines[i].line) {
			fmt.Fprintf(&buf, "    %s\n", shorten(lines[i].line))
			k--
		}
	}
	return buf.String()
}

func shorten(s string) string {
	const maxLen = 400
	if len(s) > maxLen {
		return s[:maxLen] + "…"
	}
	return s
}
