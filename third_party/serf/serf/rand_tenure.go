// Copyright IBM Corp. 2013, 2026
// SPDX-License-Identifier: MPL-2.0

// This file is tenure's patch (third_party/serf/PATCH.md): each use of
// randomness draws from a source of its own, which Config.Rand may
// supply, instead of the global math/rand.

package serf

import (
	"math/rand"
	"sync"
)

// Names of serf's uses of randomness, as Config.Rand receives them.
// memberlist's own uses are memberlist.Config.Rand's; the snapshot's
// shuffle of the members to rejoin (only with a SnapshotPath) stays on the
// global source.
const (
	RandQueryID    = "query-id"    // a query's ID
	RandReconnect  = "reconnect"   // whether and whom the reconnect loop tries
	RandQueryRelay = "query-relay" // members that relay a query response
	RandCoordinate = "coordinate"  // the direction between coincident coordinates
)

// randSource is one use's source: Config.Rand's, under a lock, or the
// global math/rand when nil.
type randSource struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newRandSource(conf *Config, use string) *randSource {
	if conf.Rand == nil {
		return nil
	}
	r := conf.Rand(use)
	if r == nil {
		return nil
	}
	return &randSource{r: r}
}

func (s *randSource) int31() int32 {
	if s == nil {
		return rand.Int31()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Int31()
}

func (s *randSource) int31n(n int32) int32 {
	if s == nil {
		return rand.Int31n(n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Int31n(n)
}

func (s *randSource) intn(n int) int {
	if s == nil {
		return rand.Intn(n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Intn(n)
}

func (s *randSource) float32() float32 {
	if s == nil {
		return rand.Float32()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Float32()
}

// randSources holds one source per use (the coordinate client's goes to
// its coordinate.Config, which draws under the client's lock).
type randSources struct {
	queryID, reconnect, queryRelay *randSource
}

func newRandSources(conf *Config) randSources {
	return randSources{
		queryID:    newRandSource(conf, RandQueryID),
		reconnect:  newRandSource(conf, RandReconnect),
		queryRelay: newRandSource(conf, RandQueryRelay),
	}
}
