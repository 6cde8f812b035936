package backoff

import (
	"slices"
	"testing"
	"time"
)

func TestDoubling(t *testing.T) {
	b := New(100*time.Millisecond, time.Second)
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("pauses %v, want %v", got, want)
	}
	b.Reset()
	if d := b.Next(); d != 100*time.Millisecond {
		t.Fatalf("after Reset %v, want the minimum", d)
	}
}

func TestDoublingMaxBelowMin(t *testing.T) {
	b := New(time.Second, time.Millisecond)
	if a, c := b.Next(), b.Next(); a != time.Second || c != time.Second {
		t.Fatalf("pauses %v, %v; want the minimum throughout", a, c)
	}
}
