// Copyright IBM Corp. 2013, 2026
// SPDX-License-Identifier: MPL-2.0

// This file is tenure's patch (third_party/memberlist/PATCH.md): each use
// of randomness draws from a source of its own, which Config.Rand may
// supply, instead of the global math/rand.

package memberlist

import (
	"math/rand"
	"sync"
)

// Names of memberlist's uses of randomness, as Config.Rand receives them.
const (
	RandProbeStagger    = "probe-stagger"     // the probe ticker's first wait
	RandGossipStagger   = "gossip-stagger"    // the gossip ticker's first wait
	RandPushPullStagger = "push-pull-stagger" // the push/pull loop's first wait
	RandProbeIndirect   = "probe-indirect"    // members asked for an indirect ping
	RandProbeOrder      = "probe-order"       // the probe order's reshuffle after a round
	RandNodeOffset      = "node-offset"       // a new member's place in the probe order
	RandGossip          = "gossip"            // gossip targets
	RandPushPull        = "push-pull"         // the push/pull partner
)

// randSource is one use's source: Config.Rand's, under a lock (a use may
// draw from several goroutines), or the global math/rand when nil.
type randSource struct {
	mu sync.Mutex
	r  *rand.Rand
}

// newRandSource returns use's source from conf.Rand, nil without one.
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

func (s *randSource) int63() int64 {
	if s == nil {
		return rand.Int63()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Int63()
}

func (s *randSource) uint32() uint32 {
	if s == nil {
		return rand.Uint32()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Uint32()
}

func (s *randSource) shuffle(n int, swap func(i, j int)) {
	if s == nil {
		rand.Shuffle(n, swap)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.Shuffle(n, swap)
}

// randSources holds one source per use.
type randSources struct {
	probeStagger, gossipStagger, pushPullStagger *randSource
	probeIndirect, probeOrder, nodeOffset        *randSource
	gossip, pushPull                             *randSource
}

func newRandSources(conf *Config) randSources {
	return randSources{
		probeStagger:    newRandSource(conf, RandProbeStagger),
		gossipStagger:   newRandSource(conf, RandGossipStagger),
		pushPullStagger: newRandSource(conf, RandPushPullStagger),
		probeIndirect:   newRandSource(conf, RandProbeIndirect),
		probeOrder:      newRandSource(conf, RandProbeOrder),
		nodeOffset:      newRandSource(conf, RandNodeOffset),
		gossip:          newRandSource(conf, RandGossip),
		pushPull:        newRandSource(conf, RandPushPull),
	}
}
