package rpc

import (
	"sync"
	"testing"
)

func TestWorkerPoolReusesIdleWorkers(t *testing.T) {
	p := newWorkerPool(2)
	for range 5 {
		ran := false
		p.run(jobFunc(func() { ran = true }))
		if !ran {
			t.Fatal("run returned before its job ran")
		}
	}
	if p.started != 1 {
		t.Fatalf("%d workers started for 5 jobs one after another, want 1", p.started)
	}

	// Three jobs at once need three workers; only two stay idle after.
	release := make(chan struct{})
	var running, wg sync.WaitGroup
	running.Add(3)
	for range 3 {
		wg.Go(func() {
			p.run(jobFunc(func() {
				running.Done()
				<-release
			}))
		})
	}
	running.Wait()
	close(release)
	wg.Wait()
	p.mu.Lock()
	started, idle := p.started, len(p.idle)
	p.mu.Unlock()
	if started != 3 {
		t.Fatalf("%d workers started in all, want 3 (1 reused, 2 new)", started)
	}
	if idle != 2 {
		t.Fatalf("%d idle workers kept, want the bound, 2", idle)
	}

	p.close()
	p.mu.Lock()
	idle = len(p.idle)
	p.mu.Unlock()
	if idle != 0 {
		t.Fatalf("%d idle workers after close", idle)
	}
	// A job after close still runs, on a worker that then ends.
	ran := false
	p.run(jobFunc(func() { ran = true }))
	if !ran {
		t.Fatal("a job after close did not run")
	}
}
