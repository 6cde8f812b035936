package sim_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/recipe"
	"github.com/tenurekv/tenure/sim"
)

var flagLedgerSeeds = flag.Int("ledger-seeds", 3, "TestElectionWithFenceKeepsTheLedgerExclusive: how many seeds (make test runs 3; 20 or more to be surer)")

// The ledger is the resource the lock guards: a key in the store that the
// holder writes, one entry at a time. Each write is recorded with the
// store's index for it, the order in which the store took the writes.
const (
	ledgerKey  = "ledger/entries"
	leaderKey  = "ledger/leader"
	kindWrite  = "ledger-write"
	beliefName = "leader"
)

// ledgerWrite is one write the store accepted: which holder's term made it
// and at what store index.
type ledgerWrite struct {
	Term  string
	Index uint64
}

func (w ledgerWrite) String() string { return fmt.Sprintf("%s@%d", w.Term, w.Index) }

// exclusiveLedger is the invariant the lock is for: taken in the store's
// order, the holders' writes never interleave. Once a term's write follows
// another term's, no earlier term writes again: a holder that wrote after
// its successor had is one that believed it held the lock when it no
// longer did.
var exclusiveLedger = sim.Invariant{Name: "exclusive-ledger", Check: func(h sim.History) []sim.Violation {
	type at struct {
		w  ledgerWrite
		rc sim.Record
	}
	var ws []at
	for _, r := range h.Of(kindWrite) {
		ws = append(ws, at{r.Value.(ledgerWrite), r})
	}
	slices.SortFunc(ws, func(a, b at) int { return cmp.Compare(a.w.Index, b.w.Index) })
	var out []sim.Violation
	done := map[string]ledgerWrite{} // terms another term has written after
	for i := 1; i < len(ws); i++ {
		prev, cur := ws[i-1].w, ws[i].w
		if prev.Term == cur.Term {
			continue
		}
		done[prev.Term] = cur
		if next, ok := done[cur.Term]; ok {
			out = append(out, sim.Violation{At: ws[i].rc.At, Msg: fmt.Sprintf("%s wrote %s after %s had written %s: two holders' writes interleave", ws[i].rc.Process, cur, next.Term, next)})
		}
	}
	return out
}}

// work is how long a holder works between checking that it still holds
// the lock and writing the result: a pause that lands here outlasts the
// check.
const work = 500 * time.Millisecond

// lockHolder is a process that guards the ledger with consul/api's Lock,
// as its documentation shows: take the lock, and while the lost channel is
// open, work and write. Nothing stops a write that a pause delayed past
// the loss of the lock.
func lockHolder(ctx context.Context, p *sim.Process) {
	lock, err := p.API().LockOpts(&api.LockOptions{Key: leaderKey, Value: []byte(p.Name())})
	if err != nil {
		p.Record("error", err.Error())
		return
	}
	for term := 1; ctx.Err() == nil; term++ {
		lost, err := lock.Lock(ctx.Done())
		if err != nil || lost == nil {
			_ = p.Sleep(ctx, time.Second)
			continue
		}
		name := fmt.Sprintf("%s#%d", p.Name(), term)
		p.Begin(beliefName)
		for n := 0; n < 10 && ctx.Err() == nil; n++ {
			select {
			case <-lost:
				n = 10
				continue
			default:
			}
			if p.Sleep(ctx, work) != nil {
				break
			}
			ok, resp, _, err := p.API().Txn().Txn(api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: ledgerKey, Value: []byte(fmt.Sprintf("%s/%d", name, n))}}}, nil)
			if err == nil && ok && len(resp.Results) == 1 {
				p.Record(kindWrite, ledgerWrite{Term: name, Index: resp.Results[0].KV.ModifyIndex})
			}
		}
		p.End(beliefName)
		_ = lock.Unlock()
		_ = p.Sleep(ctx, time.Duration(1+p.Rand().IntN(3))*time.Second)
	}
}

// electionHolder is the same process on recipe.Election, every write sent
// through recipe.Fence: the store applies it only while the writer's
// sequencer still holds the leader key, so a write a pause delayed past
// the loss is refused, and the holder steps down.
func electionHolder(ctx context.Context, p *sim.Process) {
	e, err := p.Recipe().Election("ledger", recipe.LockOptions{Value: []byte(p.Name())})
	if err != nil {
		p.Record("error", err.Error())
		return
	}
	for term := 1; ctx.Err() == nil; term++ {
		h, err := e.Campaign(ctx)
		if err != nil {
			_ = p.Sleep(ctx, time.Second)
			continue
		}
		name := fmt.Sprintf("%s#%d", p.Name(), term)
		p.Begin(beliefName)
		for n := 0; n < 10 && ctx.Err() == nil; n++ {
			select {
			case <-h.Lost():
				n = 10
				continue
			default:
			}
			if p.Sleep(ctx, work) != nil {
				break
			}
			res, err := p.Recipe().Fence(ctx, h.Sequencer(), api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: ledgerKey, Value: []byte(fmt.Sprintf("%s/%d", name, n))}}})
			if errors.Is(err, recipe.ErrStaleSequencer) {
				p.Record("refused", name)
				break
			}
			for _, r := range res {
				if err == nil && r.KV != nil && r.KV.Key == ledgerKey {
					p.Record(kindWrite, ledgerWrite{Term: name, Index: r.KV.ModifyIndex})
				}
			}
		}
		p.End(beliefName)
		_ = h.Release(context.WithoutCancel(ctx))
		_ = p.Sleep(ctx, time.Duration(1+p.Rand().IntN(3))*time.Second)
	}
}

// ledgerRun is three processes of one kind contending for the ledger, the
// holder's host now and then paused for a while (a GC pause, a stopped
// VM): the fault Consul's documentation warns of.
func ledgerRun(holder func(context.Context, *sim.Process)) func(*sim.Cluster) {
	return func(c *sim.Cluster) {
		for range 3 {
			c.Go(holder)
		}
	}
}

// ledgerFaults are the faults both variants run under: the processes'
// hosts paused or crashed, servers paused, crashed, partitioned.
var ledgerFaults = []sim.FaultKind{sim.ProcessPause, sim.ProcessCrash, sim.Partition, sim.ServerPause, sim.ServerCrash, sim.LeaderKill}

func ledgerOptions(seed uint64, artifacts string) sim.Options {
	return sim.Options{Seed: seed, Duration: 90 * time.Second, Faults: ledgerFaults,
		Invariants: []sim.Invariant{exclusiveLedger}, ArtifactDir: artifacts}
}

// TestLockWithoutFencingLosesTheLedger is exclusiveLedger's known-bad
// input: consul/api's Lock, without fencing, under ledgerFaults. Seed 27
// broke it when last run, at one P and at two (seeds 1-26 did not: their
// pauses missed a holder or were too short; seed 8, which broke it before
// agents full-synced on every new leader, now pauses a holder before its
// first write), so the search starts there; the failure shrinks to the
// one process pause that matters and two processes, and the report prints
// the smallest schedule.
func TestLockWithoutFencingLosesTheLedger(t *testing.T) {
	var failed *sim.Result
	for seed := uint64(27); seed <= 36 && failed == nil; seed++ {
		r, err := sim.Simulate(t, ledgerOptions(seed, ""), ledgerRun(lockHolder))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: %d writes, broke exclusive-ledger: %v; faults: %s", seed, len(r.History.Of(kindWrite)), r.Broke(exclusiveLedger.Name), r.Timeline)
		if r.Broke(exclusiveLedger.Name) {
			failed = r
		}
	}
	if failed == nil {
		t.Fatal("no seed of 27-36 broke exclusive-ledger with consul/api's Lock under ledgerFaults")
	}
	s, err := sim.Shrink(t, failed, ledgerRun(lockHolder))
	if err != nil {
		t.Fatal(err)
	}
	failed.Shrunk = s
	if err := failed.WriteArtifacts(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	// The page a user opens first names the broken invariant.
	page, err := os.ReadFile(filepath.Join(failed.ArtifactDir, "report.html"))
	if err != nil || !strings.Contains(string(page), `data-check="exclusive-ledger"`) {
		t.Errorf("report.html does not list the exclusive-ledger violation (read: %v)", err)
	}
	// ...and draws the processes' beliefs on their lanes.
	if !strings.Contains(string(page), ": believes "+beliefName) {
		t.Error("report.html draws no process's belief")
	}
	if len(s.Schedule) == 0 || len(s.Schedule) > len(s.From) {
		t.Errorf("shrunk to %d faults of %d", len(s.Schedule), len(s.From))
	}
	if !slices.ContainsFunc(s.Schedule, func(f sim.Fault) bool { return f.Kind == sim.ProcessPause }) {
		t.Errorf("the smallest schedule has no process pause:\n%s", sim.FormatSchedule(s.Schedule))
	}
	t.Logf("found and shrunk:\n%s", failed.Report(t))
}

// TestElectionWithFenceKeepsTheLedgerExclusive: the same processes on
// recipe.Election with every write through recipe.Fence keep the ledger
// exclusive under the same faults, and tenure's properties hold, over
// -ledger-seeds seeds. The holders' beliefs still overlap under a long
// pause (no failure detector can stop that); fencing is what makes the
// overlap harmless, and the test counts the seeds where it happened.
func TestElectionWithFenceKeepsTheLedgerExclusive(t *testing.T) {
	overlapped, writes := 0, 0
	for seed := uint64(1); seed <= uint64(*flagLedgerSeeds); seed++ {
		r := sim.Check(t, ledgerOptions(seed, t.TempDir()), ledgerRun(electionHolder))
		writes += len(r.History.Of(kindWrite))
		if len(sim.AtMostOne(beliefName).Check(r.History)) > 0 {
			overlapped++
		}
	}
	if writes == 0 {
		t.Fatal("no process ever wrote the ledger")
	}
	t.Logf("%d seeds held exclusive-ledger (%d writes); in %d of them two processes believed they led at once", *flagLedgerSeeds, writes, overlapped)
}
