// Copyright IBM Corp. 2013, 2026
// SPDX-License-Identifier: MPL-2.0

// This file is tenure's patch (third_party/raft/PATCH.md): a follower may
// take a new server ID once the configuration lists it under that ID and
// no longer under its old one, as a restart with the new ID would. tenure
// moves its servers from node-name IDs to node IDs this way without
// restarting them.

package raft

import (
	"errors"
	"fmt"
)

// ErrNotFollower is SetLocalID's answer on a leader or a candidate.
var ErrNotFollower = errors.New("not a follower")

type localIDFuture struct {
	deferError
	id ServerID
}

// SetLocalID makes id this server's ID. It succeeds only on a follower
// whose latest configuration lists id and does not list the current ID;
// setting the current ID again does nothing.
func (r *Raft) SetLocalID(id ServerID) error {
	f := &localIDFuture{id: id}
	f.init()
	select {
	case r.localIDCh <- f:
	case <-r.shutdownCh:
		return ErrRaftShutdown
	}
	return f.Error()
}

// setLocalID runs on the main loop, in the follower state.
func (r *Raft) setLocalID(id ServerID) error {
	if id == r.localID {
		return nil
	}
	if !inConfiguration(r.configurations.latest, id) {
		return fmt.Errorf("server ID %q is not in the latest configuration", id)
	}
	if inConfiguration(r.configurations.latest, r.localID) {
		return fmt.Errorf("the latest configuration still lists server ID %q", r.localID)
	}
	r.confReloadMu.Lock()
	conf := r.config()
	conf.LocalID = id
	r.conf.Store(conf)
	r.confReloadMu.Unlock()
	r.logger.Info("server ID changed", "from", r.localID, "to", id)
	r.localID = id
	return nil
}
