package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The disk of the machine this project is measured on slows down at one
// phase of every 100 ms of the wall clock once enough is written to it
// (bench/results/2026-11-29-tail-latency.md): a lone client's slow
// requests then start in the same 20 ms of every 100 ms, on any system,
// and the one that writes more a second meets it more. These figures let a
// sitting tell that dip from a system's own tail.
const (
	phasePeriod = 100 * time.Millisecond
	phaseWindow = 20 * time.Millisecond
	// slowFactor: a request slower than this many times the row's median
	// is a slow one.
	slowFactor = 4
)

// phaseOf is t's offset into its period of the wall clock.
func phaseOf(t time.Time) time.Duration {
	return time.Duration(t.UnixNano() % int64(phasePeriod))
}

// slowByPhase counts the requests slower than slowFactor × their median
// and the share of them that started within the phaseWindow of the wall
// clock's phasePeriod that holds the most (a window may wrap past the
// period's end). Spread evenly, that share is about phaseWindow/phasePeriod;
// a periodic dip of the machine's shows as a share near 1.
func slowByPhase(starts []time.Time, durs []time.Duration) (slow int, share float64) {
	if len(starts) != len(durs) || len(durs) == 0 {
		return 0, 0
	}
	threshold := slowFactor * median(durs)
	perMs := make([]int, phasePeriod/time.Millisecond)
	for i, d := range durs {
		if d > threshold {
			slow++
			perMs[phaseOf(starts[i])/time.Millisecond]++
		}
	}
	if slow == 0 {
		return 0, 0
	}
	width := int(phaseWindow / time.Millisecond)
	best := 0
	for from := range perMs {
		n := 0
		for k := range width {
			n += perMs[(from+k)%len(perMs)]
		}
		best = max(best, n)
	}
	return slow, float64(best) / float64(slow)
}

// phaseCell is one round's slow requests and their share in the busiest
// window, e.g. "27: 81%".
func phaseCell(slow int, share float64) string {
	if slow == 0 {
		return "0"
	}
	return fmt.Sprintf("%d: %.0f%%", slow, 100*share)
}

// phaseTable lists, case by case and round by round, the slow requests
// and the share of them in the busiest 20 ms of the 100 ms.
func (r *benchResults) phaseTable(names []string) string {
	return fmt.Sprintf("\nrequests over %d× the row's median, and the share of them that started in the busiest %v of the\n"+
		"wall clock's %v (about %.0f%% if spread evenly; near 100%% is the machine's disk, not the system)\n",
		slowFactor, phaseWindow, phasePeriod, 100*float64(phaseWindow)/float64(phasePeriod)) +
		r.roundsTable(names, func(res rowResult) string { return phaseCell(res.slowRequests, res.slowInWindow) })
}

// diskDipBin is the bin of the wall clock's period diskDip counts in.
const diskDipBin = 5 * time.Millisecond

// diskDip runs writers goroutines, each appending 300 bytes to a
// zero-filled file of its own in dir and syncing it, for d. It returns the
// syncs a second and how many completed in the slowest diskDipBin of the
// wall clock's phasePeriod against the median bin: near 1 on a disk that
// keeps its pace, far below 1 on one that dips at one phase.
func diskDip(dir string, writers int, d time.Duration) (perSecond, dip float64, err error) {
	bins := make([]int, phasePeriod/diskDipBin)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, writers)
	)
	end := time.Now().Add(d)
	for w := range writers {
		wg.Go(func() {
			errs[w] = syncLoop(filepath.Join(dir, fmt.Sprintf("dip-probe-%d", w)), end, func(at time.Time) {
				mu.Lock()
				bins[phaseOf(at)/diskDipBin]++
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	total := 0
	for _, n := range bins {
		total += n
	}
	return float64(total) / d.Seconds(), dipOf(bins), nil
}

// dipOf is the smallest bin over the median bin; 0 when no bin has any.
func dipOf(bins []int) float64 {
	s := slices.Clone(bins)
	slices.Sort(s)
	mid := s[len(s)/2]
	if mid == 0 {
		return 0
	}
	return float64(s[0]) / float64(mid)
}

// syncLoop writes and syncs 300 bytes at a time into a zero-filled 4 MiB
// file at path until end, calling done with each sync's start.
func syncLoop(path string, end time.Time, done func(start time.Time)) error {
	const size, rec = 4 << 20, 300
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("open dip probe: %w", err)
	}
	defer os.Remove(path)
	defer f.Close()
	if _, err := f.Write(make([]byte, size)); err != nil {
		return fmt.Errorf("fill dip probe: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync dip probe: %w", err)
	}
	buf := make([]byte, rec)
	for off := int64(0); time.Now().Before(end); off = (off + rec) % (size - rec) {
		start := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("write dip probe: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync dip probe: %w", err)
		}
		done(start)
	}
	return nil
}
