package checks

import (
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

func (b *tb) note(at time.Duration, node, msg string) {
	b.add(at, core.Event{Kind: core.KindNote, Node: node, Msg: msg})
}

// TestCheckStopsOnFailedSync: after its disk failed an fsync a server must
// stop itself within 5 s; the fault healing first, or the run ending,
// leaves it unjudged.
func TestCheckStopsOnFailedSync(t *testing.T) {
	run := func(stopAt, healAt, endAt time.Duration) []core.Event {
		b := newTB()
		b.fault(&core.FaultMark{ID: 1, Kind: core.FaultFsyncError, Phase: "start", Targets: []string{"n1"}}, sec(10), healAt)
		b.note(sec(11), "n1", core.NoteSyncFailedPrefix+"/data/raft/1.wal")
		if stopAt >= 0 {
			b.note(stopAt, "n1", core.NoteStopsPrefix+"fsync failed")
		}
		return b.end(endAt)
	}
	mustCheck(t, CheckStopsOnSync, run(sec(11), sec(25), sec(60)), 0)   // stops at once
	mustCheck(t, CheckStopsOnSync, run(sec(15.9), sec(25), sec(60)), 0) // within the bound
	mustCheck(t, CheckStopsOnSync, run(-1, sec(25), sec(60)), 1)        // goes on
	mustCheck(t, CheckStopsOnSync, run(sec(17), sec(25), sec(60)), 1)   // stops too late
	mustCheck(t, CheckStopsOnSync, run(-1, sec(14), sec(60)), 0)        // healed within the bound
	mustCheck(t, CheckStopsOnSync, run(-1, sec(14), sec(15)), 0)        // the run ended first
}

// TestCheckRejoinsAfterPowerLoss: each server a power loss cut applies a
// new entry within an election and the slack of the heal; a replay of its
// own log does not count.
func TestCheckRejoinsAfterPowerLoss(t *testing.T) {
	run := func(applyAt time.Duration, replay bool, endAt time.Duration) []core.Event {
		b := newTB()
		b.ev[0].Run.Bounds.Election, b.ev[0].Run.Bounds.Slack = 10*time.Second, 5*time.Second
		b.fault(&core.FaultMark{ID: 1, Kind: core.FaultPowerLoss, Phase: "start", Targets: []string{"n1", "n2"}}, sec(10), sec(15))
		b.obs(sec(16), "n2", false, core.StateObs{Index: 40})
		if applyAt >= 0 {
			b.obs(applyAt, "n1", false, core.StateObs{Index: 41, Replay: replay})
		}
		return b.end(endAt)
	}
	mustCheck(t, CheckRejoins, run(sec(17), false, sec(60)), 0)
	mustCheck(t, CheckRejoins, run(-1, false, sec(60)), 1)      // never applies again
	mustCheck(t, CheckRejoins, run(sec(17), true, sec(60)), 1)  // only replays its log
	mustCheck(t, CheckRejoins, run(sec(31), false, sec(60)), 1) // too late
	mustCheck(t, CheckRejoins, run(-1, false, sec(29)), 0)      // the run ended first

	// Another fault within the bound may cut the server off again: not
	// judged; one after the bound does not excuse it.
	next := func(at time.Duration) []core.Event {
		b := newTB()
		b.ev[0].Run.Bounds.Election, b.ev[0].Run.Bounds.Slack = 10*time.Second, 5*time.Second
		b.fault(&core.FaultMark{ID: 1, Kind: core.FaultPowerLoss, Phase: "start", Targets: []string{"n1"}}, sec(10), sec(15))
		b.fault(&core.FaultMark{ID: 2, Kind: core.FaultServerPause, Phase: "start", Targets: []string{"n1"}}, at, at+sec(5))
		return b.end(sec(60))
	}
	mustCheck(t, CheckRejoins, next(sec(18)), 0)
	mustCheck(t, CheckRejoins, next(sec(31)), 1)
}
