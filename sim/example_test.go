package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim"
)

// Check runs the user's processes under seeded faults and fails the test
// with a report (violations, faults, the smallest failing schedule, the
// replay command) if an invariant or one of tenure's properties broke.
// Here each process takes consul/api's lock and records what it believes;
// AtMostOne states that no two believed it at once. A pause of the
// holder's host that outlasts its session breaks it: the paused holder
// still believes while another holds the lock (see
// TestLockWithoutFencingLosesTheLedger for what fencing does about it).
func ExampleCheck() {
	var t *testing.T // the test's own
	sim.Check(t, sim.Options{Seed: 8, Faults: []sim.FaultKind{sim.ProcessPause}, Invariants: []sim.Invariant{sim.AtMostOne("leader")}},
		func(c *sim.Cluster) {
			for range 2 {
				c.Go(func(ctx context.Context, p *sim.Process) {
					lock, err := p.API().LockKey("service/demo/leader")
					if err != nil {
						return
					}
					for ctx.Err() == nil {
						lost, err := lock.Lock(ctx.Done())
						if err != nil || lost == nil {
							_ = p.Sleep(ctx, time.Second)
							continue
						}
						p.Begin("leader")
						select {
						case <-lost:
						case <-ctx.Done():
						}
						p.End("leader")
						_ = lock.Unlock()
					}
				})
			}
		})
}

// AtMostOne is checked over the spans each process's Begin and End make.
func ExampleAtMostOne() {
	h := sim.History{End: 30 * time.Second, Records: []sim.Record{
		{At: 1 * time.Second, Process: "p1", Kind: sim.KindBegin, Name: "leader"},
		{At: 12 * time.Second, Process: "p2", Kind: sim.KindBegin, Name: "leader"},
		{At: 14 * time.Second, Process: "p1", Kind: sim.KindEnd, Name: "leader"},
	}}
	for _, v := range sim.AtMostOne("leader").Check(h) {
		fmt.Println(v.Msg)
	}
	// Output:
	// p1 and p2 at once: p1 leader from 1.000s to 14.000s; p2 leader from 12.000s to end of run
}

// A seed fixes its schedule: the same seed, length, kinds and number of
// processes always give the same faults.
func ExampleSchedule() {
	s, err := sim.Schedule(8, 90*time.Second, []sim.FaultKind{sim.ProcessPause, sim.Partition}, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sim.FormatSchedule(s))
	// Output:
	// #1 partition at 12.426s for 10.798s
	// #2 process-pause at 30.173s for 26.807s
}
