package checks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

type event struct {
	At             time.Duration // since the recorder was made (virtual time in a bubble)
	ID             string
	Status, Output string
}

type recorder struct {
	start  time.Time
	mu     sync.Mutex
	events []event
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) notify(id, status, output string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{time.Since(r.start), id, status, output})
}

func (r *recorder) take() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

func (r *recorder) of(id string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

func noStagger(time.Duration) time.Duration { return 0 }

func ttlDef(id string, ttl time.Duration) Definition {
	d, err := Prepare(Definition{ID: id, Name: id, TTL: ttl}, Remote, Policy{outputMaxSize: 16})
	if err != nil {
		panic(err)
	}
	return d
}

func TestTTLExpiresOnItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := NewRunner(Options{}, rec.notify)
		defer r.Close()
		if err := r.Start(ttlDef("t", 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		if e := rec.take(); len(e) != 0 {
			t.Fatalf("reported before its TTL: %v", e)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		want := []event{{10 * time.Second, "t", Critical, "TTL expired"}}
		if diff := cmp.Diff(want, rec.take()); diff != "" {
			t.Fatalf("expiry with no output (-want +got):\n%s", diff)
		}

		// A pass resets the TTL; the expiry that follows keeps its output.
		time.Sleep(time.Second) // 11s
		if _, err := r.UpdateTTL("t", Passing, "fine"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second) // 17s: a warn restarts the TTL again
		if _, err := r.UpdateTTL("t", Warning, "meh"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		want = []event{
			{11 * time.Second, "t", Passing, "fine"},
			{17 * time.Second, "t", Warning, "meh"},
			{27 * time.Second, "t", Critical, "TTL expired (last output before timeout follows): meh"},
		}
		if diff := cmp.Diff(want, rec.take()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		// Expired once, it stays quiet until set again.
		time.Sleep(time.Minute)
		synctest.Wait()
		if e := rec.take(); len(e) != 0 {
			t.Fatalf("an expired TTL check reported again: %v", e)
		}
	})
}

func TestTTLOutputCappedAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := NewRunner(Options{}, rec.notify)
		defer r.Close()
		if err := r.Start(ttlDef("t", time.Second)); err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("x", 20)
		got, err := r.UpdateTTL("t", Critical, long)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Repeat("x", 16) + " ... (captured 16 of 20 bytes)"; got != want {
			t.Fatalf("stored output %q, want %q", got, want)
		}
		if !r.Stop("t") {
			t.Fatal("Stop of a running TTL check said it was not running")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if e := rec.take(); len(e) != 1 {
			t.Fatalf("a stopped TTL check kept reporting: %v", e)
		}
		if _, err := r.UpdateTTL("t", Passing, ""); err == nil {
			t.Fatal("update of a stopped TTL check accepted")
		}
		if r.Stop("t") {
			t.Fatal("second Stop said it was running")
		}
	})
}

func TestUpdateTTLOnProbeCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRunner(Options{Stagger: noStagger}, func(string, string, string) {})
		defer r.Close()
		d := Definition{ID: "p", Name: "p", TCP: "x:1", Interval: time.Second}
		if err := r.start(d, scripted(Passing)); err != nil {
			t.Fatal(err)
		}
		_, err := r.UpdateTTL("p", Passing, "")
		var e *Error
		if !errors.As(err, &e) || e.Code != 500 || e.Reason != `CheckID "p" does not have associated TTL` {
			t.Fatalf("got %v", err)
		}
	})
}

func TestThresholds(t *testing.T) {
	cases := []struct {
		name     string
		s, w, c  int
		in, want string // one letter per result: p w c; want "-" for nothing reported
	}{
		{"no thresholds follow every result", 0, 0, 0, "pcwcp", "pcwcp"},
		{"first result applies whatever the thresholds", 3, 2, 3, "c", "c"},
		{"first success applies", 3, 2, 3, "p", "p"},
		{"successes before passing", 2, 0, 0, "cppp", "c-pp"},
		{"failures warn then go critical", 0, 1, 3, "pcccc", "pwwcc"},
		{"a success resets the failure run", 0, 2, 2, "pcpcc", "p-p-c"},
		{"a failure resets the success run", 2, 0, 0, "cpcpp", "c-c-p"},
		{"warning is a success", 0, 0, 0, "ww", "ww"},
	}
	letter := map[byte]string{'p': Passing, 'w': Warning, 'c': Critical}
	for _, tc := range cases {
		d := Normalize(Definition{SuccessBeforePassing: tc.s, FailuresBeforeWarning: tc.w, FailuresBeforeCritical: tc.c}, Policy{})
		th := newThresholds(d)
		var got strings.Builder
		for i := range len(tc.in) {
			s, ok := th.apply(letter[tc.in[i]])
			if !ok {
				got.WriteByte('-')
				continue
			}
			got.WriteByte(s[0])
		}
		if got.String() != tc.want {
			t.Errorf("%s: %s gave %s, want %s", tc.name, tc.in, got.String(), tc.want)
		}
	}
}

// scriptedProbe returns its statuses in turn, then repeats the last.
type scriptedProbe struct {
	mu       sync.Mutex
	statuses []string
	n        int
}

func scripted(s ...string) *scriptedProbe { return &scriptedProbe{statuses: s} }

func (p *scriptedProbe) Probe(context.Context) (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := min(p.n, len(p.statuses)-1)
	p.n++
	return p.statuses[i], fmt.Sprintf("run %d", p.n)
}

// hangProbe blocks until its attempt is cancelled, as a target that accepts
// and never answers does.
type hangProbe struct{}

func (hangProbe) Probe(ctx context.Context) (string, string) {
	<-ctx.Done()
	return Critical, "hung: " + ctx.Err().Error()
}

func TestProbeLoopIntervalAndThresholds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := NewRunner(Options{Stagger: func(time.Duration) time.Duration { return 500 * time.Millisecond }}, rec.notify)
		defer r.Close()
		d := Definition{ID: "h", Name: "h", HTTP: "http://x", Interval: 2 * time.Second, FailuresBeforeCritical: 2, FailuresBeforeWarning: 1}
		if err := r.start(d, scripted(Passing, Critical, Critical, Critical)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(7 * time.Second)
		synctest.Wait()
		want := []event{
			{500 * time.Millisecond, "h", Passing, "run 1"},
			{2500 * time.Millisecond, "h", Warning, "run 2"},
			{4500 * time.Millisecond, "h", Critical, "run 3"},
			{6500 * time.Millisecond, "h", Critical, "run 4"},
		}
		if diff := cmp.Diff(want, rec.take()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	})
}

// TestHangingCheckBlocksNoOther: one check's target never answers; the
// other keeps its one-second rhythm, the hung one reports critical at each
// timeout, and stopping the hung one mid-attempt returns at once.
func TestHangingCheckBlocksNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := NewRunner(Options{Stagger: noStagger}, rec.notify)
		defer r.Close()
		hung := Definition{ID: "hung", Name: "hung", TCP: "x:1", Interval: time.Second, Timeout: 5 * time.Second}
		ok := Definition{ID: "ok", Name: "ok", TCP: "y:1", Interval: time.Second}
		if err := r.start(hung, hangProbe{}); err != nil {
			t.Fatal(err)
		}
		if err := r.start(ok, scripted(Passing)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(7500 * time.Millisecond)
		synctest.Wait()
		oks := rec.of("ok")
		if len(oks) != 8 {
			t.Fatalf("the healthy check ran %d times in 7.5s beside a hung one, want 8: %v", len(oks), oks)
		}
		for i, e := range oks {
			if e.At != time.Duration(i)*time.Second {
				t.Fatalf("healthy run %d at %v", i, e.At)
			}
		}
		// Timeouts at 5s, then the next attempt starts at 6s and hangs to 11s.
		want := []event{{5 * time.Second, "hung", Critical, "hung: context deadline exceeded"}}
		if diff := cmp.Diff(want, rec.of("hung")); diff != "" {
			t.Fatalf("hung check (-want +got):\n%s", diff)
		}
		before := time.Now()
		if !r.Stop("hung") {
			t.Fatal("hung check not running")
		}
		if time.Since(before) != 0 {
			t.Fatal("stopping a hung check waited for its timeout")
		}
		rec.take()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if h := rec.of("hung"); len(h) != 0 {
			t.Fatalf("the stopped check reported after Stop: %v", h)
		}
	})
}

func TestRunnerBoundsAndReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := NewRunner(Options{MaxChecks: 2, Stagger: noStagger}, rec.notify)
		defer r.Close()
		for _, id := range []string{"a", "b"} {
			if err := r.Start(ttlDef(id, time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		err := r.Start(ttlDef("c", time.Minute))
		var e *Error
		if !errors.As(err, &e) || e.Reason != "Too many checks on this agent (limit 2)" {
			t.Fatalf("third check: %v", err)
		}
		// Replacing an existing ID is not a new check, and the old one stops.
		if err := r.Start(ttlDef("a", 2*time.Minute)); err != nil {
			t.Fatalf("replacing at the limit: %v", err)
		}
		time.Sleep(90 * time.Second)
		synctest.Wait()
		if got := rec.of("a"); len(got) != 0 {
			t.Fatalf("the replaced check's 1m TTL still fired: %v", got)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := rec.of("a"); len(got) != 1 || got[0].At != 2*time.Minute {
			t.Fatalf("the replacement's 2m TTL: %v", got)
		}
		r.Close()
		if err := r.Start(ttlDef("z", time.Minute)); err == nil {
			t.Fatal("a closed runner started a check")
		}
		if len(r.Running()) != 0 {
			t.Fatalf("checks left after Close: %v", r.Running())
		}
	})
}

// TestTTLLateTimerIsIgnored drives the two races a TTL timer can lose
// directly: a timer from an earlier arming that fires after a set, and one
// that fires after Stop. Neither may report.
func TestTTLLateTimerIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		c := newTTLCheck(ttlDef("t", time.Minute), func(s, o string) { rec.notify("t", s, o) })
		stale := c.gen
		c.set(Passing, "fresh")
		c.expire(stale)
		c.stop()
		c.expire(c.gen)
		want := []event{{0, "t", Passing, "fresh"}}
		if diff := cmp.Diff(want, rec.take()); diff != "" {
			t.Fatalf("a late timer reported (-want +got):\n%s", diff)
		}
		// A set after Stop changes nothing either.
		c.set(Warning, "late")
		if e := rec.take(); len(e) != 0 {
			t.Fatalf("a stopped check reported a set: %v", e)
		}
	})
}

func TestTTLOutputAtTheCapIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTTLCheck(ttlDef("t", time.Minute), func(string, string) {})
		defer c.stop()
		exact := strings.Repeat("y", 16) // ttlDef caps output at 16 bytes
		if got := c.set(Passing, exact); got != exact {
			t.Fatalf("output of exactly the cap became %q", got)
		}
	})
}

func TestStartRefusesKindsWithoutRunner(t *testing.T) {
	r := NewRunner(Options{}, func(string, string, string) {})
	defer r.Close()
	err := r.Start(Definition{ID: "g", Name: "g", GRPC: "x:1", Interval: time.Second})
	if err == nil || !strings.Contains(err.Error(), `no prober for a "grpc" check`) {
		t.Fatalf("got %v", err)
	}
	if len(r.Running()) != 0 {
		t.Fatal("a refused check is running")
	}
}
