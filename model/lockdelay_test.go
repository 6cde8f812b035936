package model_test

import (
	"testing"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestLockDelaysArmExtendAndExpire (S22): a longer delay extends a running
// one, a shorter one never shortens it, a zero delay arms nothing, and a
// delay ends exactly at its end time.
func TestLockDelaysArmExtendAndExpire(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var l model.LockDelays
	l.Arm("k", t0, 0)
	if l.Len() != 0 || l.Blocks("k", t0) {
		t.Fatalf("a zero delay armed something: len %d", l.Len())
	}
	l.Arm("k", t0, 5*time.Second)
	l.Arm("k", t0, 10*time.Second) // extends
	if got := l.Remaining("k", t0); got != 10*time.Second {
		t.Fatalf("after 5s then 10s: %v left, want 10s", got)
	}
	l.Arm("k", t0, 3*time.Second) // never shortens
	if got := l.Remaining("k", t0); got != 10*time.Second {
		t.Fatalf("after a shorter arm: %v left, want 10s", got)
	}
	if got := l.Remaining("k", t0.Add(9*time.Second)); got != time.Second {
		t.Fatalf("one second before the end: %v left", got)
	}
	if l.Blocks("k", t0.Add(10*time.Second)) || l.Remaining("k", t0.Add(11*time.Second)) != 0 {
		t.Fatal("delay still blocks at or after its end")
	}
	l.Arm("k", t0, 2*model.MaxLockDelay)
	if got := l.Remaining("k", t0); got != model.MaxLockDelay {
		t.Fatalf("a delay above the cap runs %v, want %v", got, model.MaxLockDelay)
	}
	l.Prune(t0.Add(model.MaxLockDelay))
	if l.Len() != 0 {
		t.Fatalf("prune at the end kept %d delays", l.Len())
	}
}
