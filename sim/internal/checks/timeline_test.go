package checks

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// TestFaultTimeline: each fault as it started, whom it hit and for how
// long; one that never ended has no length.
func TestFaultTimeline(t *testing.T) {
	mark := func(at time.Duration, id int, kind core.FaultKind, phase string, targets ...string) core.Event {
		return core.Event{At: at, Kind: core.KindFault, Fault: &core.FaultMark{ID: id, Kind: kind, Phase: phase, Targets: targets}}
	}
	events := []core.Event{
		mark(12900*time.Millisecond, 1, core.FaultPowerLoss, "start", "n2", "n3"),
		mark(23*time.Second, 1, core.FaultPowerLoss, "end"),
		mark(30*time.Second, 2, core.FaultClientCrash, "start", "agent1"),
	}
	want := "12.9s power-loss n2,n3 for 10.1s; 30.0s client-crash agent1"
	if got := FaultTimeline(events); got != want {
		t.Fatalf("timeline %q, want %q", got, want)
	}
	if got := FaultTimeline(nil); got != "no faults" {
		t.Fatalf("no faults: %q", got)
	}
}

// TestTimeline: the full timeline has each fault on its target's lane, an
// election mark and a leadership bar per leadership, a tenure per holding
// and an invalidation per removed session on its client's lane, with why.
func TestTimeline(t *testing.T) {
	b := newTB()
	b.ev[0].Run.Servers = []string{"n1", "n2"}
	b.ev[0].Run.Clients = []core.ClientInfo{{Name: "c1", Agent: "a1"}, {Name: "c2", Agent: "a2"}}
	b.Leader(sec(1), "n1", true)
	b.fault(&core.FaultMark{ID: 1, Kind: core.FaultPartition, Phase: "start", Targets: []string{"n2"}}, sec(2), sec(5))
	b.op(sec(2), sec(2.1), "c1", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{}}, core.Ret{SessionID: "s1"})
	b.op(sec(2), sec(2.1), "c2", core.Call{Req: core.ReqCreate, Create: &model.CreateSession{}}, core.Ret{SessionID: "s2"})
	b.obs(sec(3), "n1", true, core.StateObs{Index: 5, Keys: []core.KeyChange{{Key: "k", After: entry("k", "s1", 1, 5)}}})
	b.obs(sec(6), "n1", true, core.StateObs{Index: 6, GoneSess: []model.Session{{ID: "s1", Node: "a1"}},
		Keys: []core.KeyChange{{Key: "k", Before: entry("k", "s1", 1, 5), After: entry("k", "", 1, 5)}}})
	b.op(sec(7), sec(7.1), "c2", core.Call{Req: core.ReqDestroy, ID: "s2"}, core.Ret{OK: true})
	b.obs(sec(7.05), "n1", true, core.StateObs{Index: 7, GoneSess: []model.Session{{ID: "s2", Node: "a2"}}})
	b.Leader(sec(8), "n1", false)
	tl := Timeline(b.end(sec(9)))
	if want := []string{"n1", "n2", "c1", "c2"}; !slices.Equal(tl.Lanes, want) {
		t.Fatalf("lanes %v, want %v", tl.Lanes, want)
	}
	type item struct {
		kind, lane string
		start, end time.Duration
	}
	var got []item
	for _, s := range tl.Spans {
		got = append(got, item{s.Kind, s.Lane, s.Start, s.End})
	}
	want := []item{
		{SpanElection, "n1", sec(1), sec(1)},
		{SpanLeader, "n1", sec(1), sec(8)},
		{SpanFault, "n2", sec(2), sec(5)},
		{SpanTenure, "c1", sec(3), sec(6)},
		{SpanInvalidation, "c1", sec(6), sec(6)},
		{SpanInvalidation, "c2", sec(7.05), sec(7.05)},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("timeline\n%v\nwant\n%v\n%s", got, want, tl)
	}
	if s := tl.String(); !strings.Contains(s, "2.0s–5.0s") || !strings.Contains(s, "TTL expired") || !strings.Contains(s, "destroyed by its client") {
		t.Fatalf("printed timeline:\n%s", s)
	}
}
