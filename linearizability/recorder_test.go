package linearizability

import (
	"errors"
	"sync"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// fakeClock advances by one microsecond per reading.
type fakeClock struct {
	mu sync.Mutex
	t  int64
}

func (c *fakeClock) now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t += 1000
	return c.t
}

func TestRecorder(t *testing.T) {
	clk := &fakeClock{}
	setup := model.Command{Register: &model.Register{Node: "n1"}}
	r := NewRecorder(clk.now, setup)
	create := r.Call(0, Input{Command: &model.Command{CreateSession: &model.CreateSession{Node: "n1", Checks: []string{}}}})
	create.Return(Output{OK: true, SessionID: "s1"})
	create.Lost() // ignored: already answered
	lock := r.Call(0, Input{Command: &model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "s1"}}})
	read := r.Call(1, Input{Read: &Read{Kind: ReadKey, Key: "k"}})
	lock.Lost()
	read.Return(Output{OK: true, Entries: []model.KVEntry{{Key: "k", LockIndex: 1, Session: "s1"}}})
	r.Call(2, Input{Command: &model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "j"}}}) // never answered
	r.Event(Event{Kind: "ttl-expiry", Earliest: 100_000, Latest: 200_000, Sessions: []string{"s1"}})
	r.Fault(Fault{Name: "pause n1", Start: 0, End: 5000})
	r.SetLockDelaySlack(10)
	h := r.History()

	if len(h.Setup) != 1 || len(h.Ops) != 4 || len(h.Events) != 1 || len(h.Faults) != 1 || h.LockDelaySlack != 10 {
		t.Fatalf("history %+v", h)
	}
	if h.Ops[0].Call >= h.Ops[0].Return || !h.Ops[0].Output.OK || h.Ops[0].Unknown {
		t.Errorf("answered op: %+v", h.Ops[0])
	}
	if !h.Ops[1].Unknown || !h.Ops[3].Unknown {
		t.Errorf("lost and pending ops must be unknown: %+v %+v", h.Ops[1], h.Ops[3])
	}
	if h.Ops[2].Call > h.Ops[1].Return || h.Ops[2].Return < h.Ops[1].Return {
		t.Errorf("the read overlapped the lock: %+v %+v", h.Ops[1], h.Ops[2])
	}
	if _, err := Check(h, Options{}); err != nil {
		t.Fatalf("recorded history: %v", err)
	}
	// The recorder's copy is independent of later recording.
	r.Call(3, Input{Read: &Read{Kind: ReadKey, Key: "k"}}).Return(Output{})
	if len(h.Ops) != 4 {
		t.Fatal("History shares its slice with the recorder")
	}
	// A lock index that no acquire issued is rejected.
	r.Call(3, Input{Read: &Read{Kind: ReadKey, Key: "k"}}).Return(Output{OK: true, Entries: []model.KVEntry{{Key: "k", LockIndex: 7}}})
	if _, err := Check(r.History(), Options{}); !errors.Is(err, ErrIllegal) {
		t.Fatalf("impossible lock index accepted: %v", err)
	}
}

// Events may report invalidating sessions the history never learned of
// (unknown creates that took effect), but not miss one the model
// invalidates, nor name a known session the model keeps.
func TestEventInvalidatedReport(t *testing.T) {
	base := func(reported ...string) History {
		return History{
			Setup: []model.Command{{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "c", Status: model.HealthPassing}}}}},
			Ops: []Op{
				{Client: 0, Call: 0, Return: 1, Input: Input{Command: &model.Command{CreateSession: &model.CreateSession{Node: "n1", Checks: []string{"c"}}}},
					Output: Output{OK: true, SessionID: "bound"}},
				{Client: 1, Call: 0, Return: 1, Input: Input{Command: &model.Command{CreateSession: &model.CreateSession{Node: "n1", Checks: []string{}}}},
					Output: Output{OK: true, SessionID: "free"}},
			},
			Events: []Event{{Kind: "check-critical", Earliest: 5, Latest: 6, Invalidated: reported,
				Command: &model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "c", Status: model.HealthCritical}}}}}},
		}
	}
	for _, tc := range []struct {
		reported []string
		ok       bool
	}{
		{[]string{"bound"}, true},
		{[]string{"bound", "never-seen"}, true},
		{[]string{}, false},
		{[]string{"bound", "free"}, false},
	} {
		_, err := Check(base(tc.reported...), Options{})
		if (err == nil) != tc.ok {
			t.Errorf("reported %v: err %v, want ok=%v", tc.reported, err, tc.ok)
		}
	}
}
