package checks

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/seedlog"
)

// TestTradeoffSVG: the plot is well-formed XML with one series per session
// configuration that met a fault, whichever way its cells were added.
func TestTradeoffSVG(t *testing.T) {
	tab := NewTradeoff()
	tab.AddCells([]seedlog.TradeoffCell{
		{Group: "ttl/ld=15s", Fault: "partition", Faults: 2, Recovered: 2, RecoverySum: 30 * time.Second, RecoveryMax: 20 * time.Second},
		{Group: "serf/ld=0s", Fault: "partition", Faults: 2, Recovered: 1, RecoverySum: 4 * time.Second, RecoveryMax: 4 * time.Second, Never: 1},
		{Group: "serf/ld=0s", Fault: "client-crash", Faults: 1, Recovered: 1, RecoverySum: 9 * time.Second, RecoveryMax: 9 * time.Second},
		{Group: "none & <odd>", Fault: "leader-kill", Faults: 1, Never: 1},
		{Group: "ttl/ld=15s", Fault: "none", Stale: 3}, // no fault: not a series of its own
	}, 2)
	got := svgSeries(t, tab)
	if want := []string{"none & <odd>", "serf/ld=0s", "ttl/ld=15s"}; !slices.Equal(got, want) {
		t.Fatalf("series %q, want %q", got, want)
	}
	if got := svgSeries(t, NewTradeoff()); len(got) != 0 {
		t.Fatalf("an empty table drew series %q", got)
	}
}

// svgSeries writes tab's plot, checks it parses as XML and returns the
// configurations its series name.
func svgSeries(t *testing.T, tab *Tradeoff) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := tab.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var series []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("plot is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		var class, config string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "class":
				class = a.Value
			case "data-config":
				config = a.Value
			}
		}
		if se.Name.Local == "g" && class == "series" {
			series = append(series, config)
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	return series
}
