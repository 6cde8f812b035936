package model_test

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tenurekv/tenure/model"
)

// TestTTLDeadlinesMatchAPlainMap: the heap-backed book answers Next,
// Expired, Deadline and Len exactly as a plain map of deadlines scanned in
// full would, over random resets, removals and clears.
func TestTTLDeadlinesMatchAPlainMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var book model.TTLDeadlines
		want := map[string]time.Time{}
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		ids := []string{"a", "b", "c", "d", "e", "f"}
		for step := range rapid.IntRange(1, 80).Draw(t, "steps") {
			id := rapid.SampledFrom(ids).Draw(t, "id")
			now := epoch.Add(time.Duration(rapid.IntRange(0, 40).Draw(t, "now")) * time.Second)
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4:
				ttl := time.Duration(rapid.IntRange(0, 20).Draw(t, "ttl")) * time.Second
				book.Reset(id, now, ttl, 2)
				if ttl == 0 {
					delete(want, id)
				} else {
					want[id] = now.Add(2 * ttl)
				}
			case 5, 6:
				book.Remove(id)
				delete(want, id)
			case 7:
				if rapid.IntRange(0, 4).Draw(t, "clear") == 0 {
					book.Clear()
					clear(want)
				}
			default:
				var expired []string
				for id, d := range want {
					if !d.After(now) {
						expired = append(expired, id)
					}
				}
				slices.Sort(expired)
				if got := book.Expired(now); !slices.Equal(got, expired) {
					t.Fatalf("step %d: Expired(%v) = %v, want %v", step, now, got, expired)
				}
			}
			var next time.Time
			for _, d := range want {
				if next.IsZero() || d.Before(next) {
					next = d
				}
			}
			if got, ok := book.Next(); ok != !next.IsZero() || !got.Equal(next) {
				t.Fatalf("step %d: Next = %v %v, want %v", step, got, ok, next)
			}
			if book.Len() != len(want) {
				t.Fatalf("step %d: Len = %d, want %d", step, book.Len(), len(want))
			}
			for _, id := range ids {
				d, ok := book.Deadline(id)
				w, wok := want[id]
				if ok != wok || !d.Equal(w) {
					t.Fatalf("step %d: Deadline(%s) = %v %v, want %v %v", step, id, d, ok, w, wok)
				}
			}
		}
	})
}

// BenchmarkTTLRenew: one renew, and re-arming the timer after it, among
// 10,000 TTL sessions.
func BenchmarkTTLRenew(b *testing.B) {
	var book model.TTLDeadlines
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = time.Duration(i).String()
		book.Reset(ids[i], now.Add(time.Duration(i)*time.Millisecond), 10*time.Second, 2)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Millisecond)
		book.Reset(ids[i%len(ids)], now, 10*time.Second, 2)
		if _, ok := book.Next(); !ok {
			b.Fatal("empty book")
		}
	}
}
