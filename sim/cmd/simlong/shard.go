package main

import (
	"fmt"
	"strconv"
	"strings"
)

// shard is one part of a seed range: K of N, K counting from 0 (as a
// Kubernetes indexed Job's JOB_COMPLETION_INDEX or a CI matrix index).
type shard struct{ k, n int }

// whole is the range undivided.
var whole = shard{0, 1}

// parseShard reads "K/N".
func parseShard(s string) (shard, error) {
	bad := func(why string) (shard, error) {
		return shard{}, fmt.Errorf("-shard %q: %s; want K/N with 0 <= K < N, K counting from 0 (e.g. -shard 0/4 … -shard 3/4)", s, why)
	}
	ks, ns, ok := strings.Cut(s, "/")
	if !ok {
		return bad("no /")
	}
	k, err := strconv.Atoi(strings.TrimSpace(ks))
	if err != nil {
		return bad("K is not a number")
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil {
		return bad("N is not a number")
	}
	switch {
	case n < 1:
		return bad("N must be at least 1")
	case k < 0 || k >= n:
		return bad(fmt.Sprintf("K must be from 0 to %d", n-1))
	}
	return shard{k, n}, nil
}

// of returns the shard's part of seeds first..first+seeds-1: a contiguous
// run of seeds (so a worker process takes consecutive ones), the parts
// differing in length by at most one and together covering every seed
// exactly once.
func (s shard) of(first uint64, seeds int) (from uint64, n int) {
	lo := seeds * s.k / s.n
	hi := seeds * (s.k + 1) / s.n
	return first + uint64(lo), hi - lo
}

func (s shard) String() string { return fmt.Sprintf("%d/%d", s.k, s.n) }
