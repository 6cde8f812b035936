package report

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// sampleRun is a small run: two servers, one client that holds a lock
// through a partition of n2, and a violation planted at 4 s.
func sampleRun() (*workload.Result, checks.Evaluation) {
	on, off := true, false
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	clock := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	hdr := core.RunHeader{Seed: 9, Servers: []string{"n1", "n2"}, Clients: []core.ClientInfo{{Name: "c1", Agent: "a1"}},
		Clocks: map[string]core.ClockSkew{"n1": {Rate: 1}, "n2": {Rate: 1}}}
	entry := &model.KVEntry{Key: "k", Session: "s1", LockIndex: 1, CreateIndex: 5, ModifyIndex: 5}
	events := []core.Event{
		{At: 0, Kind: core.KindRun, Run: &hdr},
		{At: s(1), Kind: core.KindLeader, Node: "n1", Leader: &on},
		{At: s(2), Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: core.FaultPartition, Phase: "start", Targets: []string{"n2"}}},
		{At: s(2), Kind: core.KindCall, Node: "c1", Call: &core.Call{Op: 1, Req: core.ReqCreate, Create: &model.CreateSession{}}},
		{At: s(2.1), Kind: core.KindRet, Node: "c1", Ret: &core.Ret{Op: 1, Outcome: core.OutOK, SessionID: "s1"}},
		{At: s(3), Kind: core.KindState, Node: "n1", State: &core.StateObs{Index: 5, Leader: true, Clock: clock.Add(s(3)),
			Keys: []core.KeyChange{{Key: "k", After: entry}}}},
		{At: s(5), Kind: core.KindFault, Fault: &core.FaultMark{ID: 1, Kind: core.FaultPartition, Phase: "end"}},
		{At: s(8), Kind: core.KindLeader, Node: "n1", Leader: &off},
	}
	for i := range events {
		events[i].Seq = i
	}
	res := &workload.Result{Config: workload.Config{Seed: 9}, Header: hdr, Events: events, Digest: "0123456789abcdef", Virtual: s(8)}
	ev := checks.Evaluate(res, time.Second)
	ev.Violations = append(ev.Violations, checks.Violation{Check: checks.CheckFenced, Clauses: []string{"S40"}, At: s(4),
		Msg: "fenced accepted a stale <sequencer>"})
	return res, ev
}

// TestReportStructure: the report has its six sections; the lanes draw
// every server and client with the fault, the election, the leadership and
// the tenure; the violation is listed and marked on the lanes; porcupine's
// page is embedded; and nothing is fetched from elsewhere.
func TestReportStructure(t *testing.T) {
	res, ev := sampleRun()
	dir := t.TempDir()
	path, err := Write(dir, res, ev, "go test ./sim -seed 9")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	sections := map[string]*html.Node{}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "section" {
			sections[attr(n, "id")] = n
		}
		for _, a := range n.Attr {
			if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: the report must fetch nothing", n.Data, a.Key, a.Val)
			}
		}
	}
	for _, id := range []string{"summary", "checks", "faults", "lanes", "violations", "linearizability"} {
		if sections[id] == nil {
			t.Errorf("no section %q", id)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	lanes := sections["lanes"]
	var names []string
	classes := map[string]int{}
	for n := range lanes.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		if n.Data == "text" && n.FirstChild != nil && n.FirstChild.Type == html.TextNode {
			names = append(names, n.FirstChild.Data)
		}
		classes[attr(n, "class")]++
	}
	for _, lane := range []string{"violations", "n1", "n2", "c1"} {
		if !slices.Contains(names, lane) {
			t.Errorf("no lane %q among %v", lane, names)
		}
	}
	for _, c := range []string{checks.SpanFault, checks.SpanElection, checks.SpanLeader, checks.SpanTenure, "violation-mark"} {
		if classes[c] == 0 {
			t.Errorf("lanes draw no %s (classes %v)", c, classes)
		}
	}
	// The violation: listed with its check and message, and marked.
	var li *html.Node
	for n := range sections["violations"].Descendants() {
		if n.Type == html.ElementNode && n.Data == "li" && attr(n, "data-check") == checks.CheckFenced {
			li = n
		}
	}
	if li == nil {
		t.Fatal("the violations section does not list the fenced-resource violation")
	}
	if txt := text(li); !strings.Contains(txt, "stale <sequencer>") || !strings.Contains(txt, "4.0s") {
		t.Errorf("violation item %q", txt)
	}
	if !hasID(lanes, "mark-"+attr(li, "id")) {
		t.Errorf("violation %s is not marked on the lanes", attr(li, "id"))
	}
	// Porcupine's page, whole, in the iframe.
	var frame *html.Node
	for n := range sections["linearizability"].Descendants() {
		if n.Type == html.ElementNode && n.Data == "iframe" {
			frame = n
		}
	}
	if frame == nil || !strings.Contains(attr(frame, "srcdoc"), "<html") {
		t.Error("porcupine's page is not embedded")
	}
	// The checks table marks a check that judged nothing.
	if !strings.Contains(text(sections["checks"]), "(not exercised)") {
		t.Error("the checks table does not mark checks that judged nothing")
	}
	if !strings.Contains(text(sections["faults"]), "partition") {
		t.Errorf("fault table: %q", text(sections["faults"]))
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasID(root *html.Node, id string) bool {
	for n := range root.Descendants() {
		if n.Type == html.ElementNode && attr(n, "id") == id {
			return true
		}
	}
	return false
}

func text(root *html.Node) string {
	var b strings.Builder
	for n := range root.Descendants() {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	}
	return b.String()
}

// TestExtraSpansGetALane: spans a caller adds (a harness process's
// beliefs) are drawn, on a lane of their own when the trace has none.
func TestExtraSpansGetALane(t *testing.T) {
	res, ev := sampleRun()
	var b strings.Builder
	belief := checks.Span{Kind: checks.SpanBelief, Lane: "proc-7", Start: time.Second, End: 3 * time.Second, Label: "believes leader"}
	if err := Render(&b, res, ev, "", "", belief); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, ">proc-7<") {
		t.Error("no lane for proc-7")
	}
	if !strings.Contains(page, `class="belief"`) || !strings.Contains(page, "proc-7: believes leader 1.0s–3.0s") {
		t.Error("the belief span is not drawn with its title")
	}
}
