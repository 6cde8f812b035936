package sim

import (
	"runtime"
	"slices"
)

// ddmin is Zeller's delta debugging over items that fail: a smallest
// subset found (1-minimal: dropping any one more chunk no longer fails)
// that still fails, and how many candidates it tried. Items keep their
// order. fails is asked about the empty set first, so a failure that needs
// none of the items shrinks to nothing at once.
func ddmin[T any](items []T, fails func([]T) bool) ([]T, int) {
	tried := 0
	try := func(s []T) bool {
		tried++
		// Never nil: to a caller, a nil schedule may mean "the seed's own".
		return fails(append([]T{}, s...))
	}
	if try(nil) {
		return []T{}, tried
	}
	cur, n := slices.Clone(items), 2
	for len(cur) >= 2 {
		chunk := (len(cur) + n - 1) / n
		reduced := false
		for start := 0; start < len(cur); start += chunk {
			end := min(start+chunk, len(cur))
			complement := append(slices.Clone(cur[:start]), cur[end:]...)
			if try(complement) {
				cur, n, reduced = complement, max(n-1, 2), true
				break
			}
		}
		if reduced {
			continue
		}
		if n >= len(cur) {
			break
		}
		n = min(2*n, len(cur))
	}
	return cur, tried
}

// onOneProc runs f at GOMAXPROCS=1 and restores the setting after. A seed
// replays there (doc.go, Determinism: 199 or 200 reruns of 200) and not at
// the default, where goroutines race: a shrink must rerun the failure it
// shrinks. The setting is the process's, so tests running in parallel
// meanwhile share the one P.
func onOneProc(f func()) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	f()
}
