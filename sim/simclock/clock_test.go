package simclock

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// rates exercised everywhere; 0.8 and 1.2 are the brief's examples, the others
// make ceil/floor rounding matter at nanosecond scale.
var rates = []float64{0.8, 1.2, 1, 0.3333333, 0.999999999, 1.000000001, 3.7, 0.001, 1000}

func TestNewRejectsBadRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, r := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), MinRate / 2, MaxRate * 2} {
			c, err := New(0, r)
			if !errors.Is(err, ErrBadRate) || c != nil {
				t.Errorf("New(0, %v) = %v, %v; want nil, ErrBadRate", r, c, err)
			}
		}
	})
}

func TestNowSkewMath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cases := []struct {
			offset  time.Duration
			rate    float64
			elapsed time.Duration
			want    time.Duration // node time minus bubble start
		}{
			{5 * time.Second, 1.2, 10 * time.Second, 17 * time.Second},
			{-3 * time.Second, 0.8, 10 * time.Second, 5 * time.Second},
			{0, 1, time.Hour, time.Hour},
			{0, 0.3333333, 3 * time.Nanosecond, 0}, // floor(0.9999999)
			{0, 0.3333333, 3 * time.Second, 999999900 * time.Nanosecond},
			{time.Millisecond, 1.000000001, time.Second, time.Millisecond + time.Second + 1},
		}
		for _, tc := range cases {
			start := time.Now()
			c, err := New(tc.offset, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Now().Sub(start); got != tc.offset {
				t.Errorf("rate %v offset %v: at creation Now-start = %v, want %v", tc.rate, tc.offset, got, tc.offset)
			}
			time.Sleep(tc.elapsed)
			if got := c.Now().Sub(start); got != tc.want {
				t.Errorf("rate %v offset %v after %v: Now-start = %v, want %v", tc.rate, tc.offset, tc.elapsed, got, tc.want)
			}
		}
	})
}

func TestStepMovesWallNotTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fired := make(chan time.Time, 1)
		c.AfterFunc(time.Second, func() { fired <- time.Now() })
		c.Step(time.Hour)
		if got := c.Now().Sub(start); got != time.Hour {
			t.Fatalf("after Step(1h): Now-start = %v", got)
		}
		if got := c.Offset(); got != time.Hour {
			t.Fatalf("Offset() = %v, want 1h", got)
		}
		if at := (<-fired).Sub(start); at != time.Second {
			t.Fatalf("timer fired after %v of bubble time, want 1s", at)
		}
	})
}

// firing records, for one timer, node time when armed and when it fired.
type firing struct {
	d        time.Duration
	set, got time.Time
}

// checkNotEarly is the property under test: a timer for node-duration d fires
// after at least d and at most d+ceil(rate) of node time.
func checkNotEarly(f firing, rate float64) error {
	el := f.got.Sub(f.set)
	if el < f.d {
		return errors.New("fired early")
	}
	if el > f.d+time.Duration(math.Ceil(rate)) {
		return errors.New("fired too late")
	}
	return nil
}

// runTimers arms timers for durations ds on c through arm and collects firings.
func runTimers(c *Clock, ds []time.Duration, arm func(d time.Duration, f func())) []firing {
	out := make([]firing, len(ds))
	done := make(chan int, len(ds))
	for i, d := range ds {
		out[i] = firing{d: d, set: c.Now()}
		arm(d, func() { out[i].got = c.Now(); done <- i })
	}
	for range ds {
		<-done
	}
	return out
}

func durations(seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 1))
	ds := []time.Duration{1, 2, 3, 5, 7, 11, 999, time.Millisecond, time.Second}
	for range 60 {
		ds = append(ds, time.Duration(r.Int64N(int64(3*time.Second))+1))
	}
	return ds
}

func TestAfterFuncNeverEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for i, rate := range rates {
			// Start at an odd bubble instant so floor(e0*rate) is not exact.
			time.Sleep(time.Duration(i*7919+13) * time.Nanosecond)
			c, err := New(time.Duration(i)*time.Second, rate)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(12345 * time.Nanosecond)
			fs := runTimers(c, durations(uint64(i)), func(d time.Duration, f func()) { c.AfterFunc(d, f) })
			for _, f := range fs {
				if err := checkNotEarly(f, rate); err != nil {
					t.Errorf("rate %v d=%v: node elapsed %v: %v", rate, f.d, f.got.Sub(f.set), err)
				}
			}
		}
	})
}

// TestCheckerCatchesFloorConversion shows checkNotEarly fails on a known-bad
// conversion (truncating d/rate), so the property test can fail.
func TestCheckerCatchesFloorConversion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(0, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(12345 * time.Nanosecond)
		floorConv := func(d time.Duration) time.Duration {
			hi, lo := bits.Mul64(uint64(d), rateDen)
			q, _ := bits.Div64(hi, lo, c.num)
			return time.Duration(q)
		}
		fs := runTimers(c, durations(7), func(d time.Duration, f func()) { time.AfterFunc(floorConv(d), f) })
		early := 0
		for _, f := range fs {
			if checkNotEarly(f, 1.2) != nil {
				early++
			}
		}
		if early == 0 {
			t.Fatal("checker did not flag any early firing of a truncating conversion")
		}
	})
}

func TestConversionsSaturate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow, _ := New(0, MinRate)
		fast, _ := New(0, MaxRate)
		if got := slow.BubbleDuration(math.MaxInt64); got != math.MaxInt64 {
			t.Errorf("slow.BubbleDuration(max) = %v", got)
		}
		if got := fast.NodeDuration(math.MaxInt64); got != math.MaxInt64 {
			t.Errorf("fast.NodeDuration(max) = %v", got)
		}
		if got := fast.BubbleDuration(-5); got != 0 {
			t.Errorf("BubbleDuration(-5) = %v", got)
		}
		if got := slow.NodeDuration(-5); got != 0 {
			t.Errorf("NodeDuration(-5) = %v", got)
		}
	})
}

func TestTimerStopReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, rate := range []float64{0.8, 1.2} {
			c, err := New(0, rate)
			if err != nil {
				t.Fatal(err)
			}
			calls := make(chan time.Time, 4)
			f := func() { calls <- c.Now() }

			// Stop before firing: true, never runs.
			tm := c.AfterFunc(time.Second, f)
			if !tm.Stop() {
				t.Errorf("rate %v: Stop on active timer = false", rate)
			}
			time.Sleep(3 * time.Second)
			if len(calls) != 0 {
				t.Errorf("rate %v: stopped timer fired", rate)
			}
			if tm.Stop() {
				t.Errorf("rate %v: second Stop = true", rate)
			}

			// Reset of a stopped timer: false, then fires after node-time d.
			set := c.Now()
			if tm.Reset(2 * time.Second) {
				t.Errorf("rate %v: Reset of stopped timer = true", rate)
			}
			if el := (<-calls).Sub(set); el < 2*time.Second || el > 2*time.Second+2 {
				t.Errorf("rate %v: reset timer fired after node %v, want 2s", rate, el)
			}

			// Reset of an active timer: true, old deadline replaced.
			tm = c.AfterFunc(10*time.Second, f)
			time.Sleep(time.Second)
			set = c.Now()
			if !tm.Reset(500 * time.Millisecond) {
				t.Errorf("rate %v: Reset of active timer = false", rate)
			}
			if el := (<-calls).Sub(set); el < 500*time.Millisecond || el > 500*time.Millisecond+2 {
				t.Errorf("rate %v: re-armed timer fired after node %v, want 500ms", rate, el)
			}
			if tm.Stop() {
				t.Errorf("rate %v: Stop after firing = true", rate)
			}
			time.Sleep(20 * time.Second)
			if len(calls) != 0 {
				t.Errorf("rate %v: timer fired twice", rate)
			}
		}
	})
}
