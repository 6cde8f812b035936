// Copyright IBM Corp. 2013, 2026
// SPDX-License-Identifier: MPL-2.0

// This file is tenure's patch (third_party/raft/PATCH.md): each use of
// randomness draws from a source of its own, which Config.Rand may supply,
// instead of the global math/rand.

package raft

import (
	"math/rand"
	"strconv"
	"sync"
)

// Names of raft's uses of randomness, as Config.Rand receives them.
const (
	RandFollower  = "raft-follower"  // the follower's heartbeat timeout (runFollower)
	RandCandidate = "raft-candidate" // the election timeout (runCandidate)
	RandSnapshot  = "raft-snapshot"  // the snapshot check's interval (runSnapshots)
	// RandReplicate and RandHeartbeat are a leader's per-follower uses: the
	// replicate goroutine's commit timeout and the heartbeat goroutine's
	// interval. Config.Rand receives them as use + "/" + the follower's ID
	// + "/" + the leader's term, one source per follower and term, since
	// each term starts both goroutines afresh and two of them may draw at
	// one instant.
	RandReplicate = "raft-replicate"
	RandHeartbeat = "raft-heartbeat"
)

// randSource is one use's source: Config.Rand's, under a lock, or the
// global math/rand when nil.
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

// randSources holds the node's own sources, one per use.
type randSources struct {
	follower, candidate, snapshot *randSource
}

func newRandSources(conf *Config) randSources {
	return randSources{
		follower:  newRandSource(conf, RandFollower),
		candidate: newRandSource(conf, RandCandidate),
		snapshot:  newRandSource(conf, RandSnapshot),
	}
}

// followerRandSources returns the sources of a leader's replicate and
// heartbeat goroutines for follower id in term.
func (r *Raft) followerRandSources(id ServerID, term uint64) (replicate, heartbeat *randSource) {
	conf := r.config()
	suffix := "/" + string(id) + "/" + strconv.FormatUint(term, 10)
	return newRandSource(&conf, RandReplicate+suffix), newRandSource(&conf, RandHeartbeat+suffix)
}
