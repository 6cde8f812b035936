package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/model"
)

// shortReap makes servers reap deletions after 20 s (S52), so a scene can
// watch a reap happen; reapNoFloor is the same servers with a reap that
// forgets a key's watermark without raising the floor.
var (
	shortReap = &core.Variant{Name: "short-reap-window", Config: func(cfg *agent.ServerConfig) {
		cfg.ReapWindow, cfg.ReapInterval = 20*time.Second, 5*time.Second
	}}
	reapNoFloor = &core.Variant{Name: "reap-without-floor", Config: func(cfg *agent.ServerConfig) {
		shortReap.Config(cfg)
		cfg.Apply = func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
			floor := st.LockFloor()
			res := st.Apply(index, cmd)
			if cmd.Reap == nil {
				return st, res
			}
			snap := st.Snapshot()
			snap.LockFloor = floor
			return model.RestoreUnchecked(snap), res
		}
	}}
)

// reapScene: A locks k and releases it, k is deleted, the servers reap the
// deletion, and B locks the re-created k. It returns B's sequencer.
func reapScene(t *testing.T, v *core.Variant) (*workload.Result, model.Sequencer, model.Sequencer) {
	g := sceneGroup("reaped", core.ChecksNone, 0, 0)
	var first, second model.Sequencer
	res := runSceneOn(t, 11, []workload.LockGroup{g}, v, func(s *scene) {
		a, b := s.actor("A"), s.actor("B")
		a.Create(g)
		b.Create(g)
		a.lockRetry(time.Second, 10*time.Second)
		first = a.w.Seq
		a.release()
		if r := a.w.Api.Kv(model.KVOp{Verb: model.KVDelete, Key: g.Key}); r.Outcome != core.OutOK {
			t.Fatalf("delete: %+v", r)
		}
		time.Sleep(40 * time.Second) // window plus interval, with room for a slow apply
		b.lockRetry(time.Second, 10*time.Second)
		second = b.w.Seq
		b.release()
	})
	return res, first, second
}

// TestSceneReapKeepsSequencers (S52): after a reap, a re-created key's first
// acquire gets a LockIndex above the old key's, and every check passes.
func TestSceneReapKeepsSequencers(t *testing.T) {
	res, first, second := reapScene(t, shortReap)
	if second.LockIndex <= first.LockIndex {
		t.Fatalf("after the reap B got %+v; A had %+v", second, first)
	}
	sceneClean(t, res)
}

// TestSceneReapWithoutFloorIsCaught: the same scene on servers whose reap
// drops the floor reissues A's LockIndex to B, and sequencer-unique says so.
func TestSceneReapWithoutFloorIsCaught(t *testing.T) {
	res, first, second := reapScene(t, reapNoFloor)
	if second.LockIndex != first.LockIndex {
		t.Fatalf("the broken reap did not reissue: A %+v, B %+v", first, second)
	}
	vs := checks.RunChecks(res.Events)
	if !slices.ContainsFunc(vs, func(v checks.Violation) bool { return v.Check == checks.CheckSequencer }) {
		t.Fatalf("%s did not catch a reissued sequencer; violations: %v", checks.CheckSequencer, vs)
	}
}
