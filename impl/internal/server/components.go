package server

import "fmt"

// Components names the parts this server was built with, in a fixed
// order: its raft transport, its raft log and how the log reaches the disk,
// its snapshots, where its catalog registrations come from and how it
// forwards. Two servers that list the same components run the same code
// paths; the simulator's test of its assembly compares its servers' list
// with the binary's.
func (s *Server) Components() []string {
	var out []string
	switch {
	case s.cfg.Dev:
		out = append(out, "raft transport: in memory (dev)")
	case s.demux != nil:
		out = append(out, "raft transport: NetworkTransport on the server port, shared with forwarded requests")
	default:
		out = append(out, fmt.Sprintf("raft transport: injected %T", s.cfg.Transport))
	}
	switch {
	case s.cfg.Dev:
		out = append(out, "raft log: in memory (dev)")
	case s.stores.Sync == nil:
		out = append(out, fmt.Sprintf("raft log: injected %T", s.cfg.LogStore))
	case s.deferSyncs:
		out = append(out, "raft log: raft-wal, the leader's fsync deferred behind the apply gate and the commit clamp")
	default:
		out = append(out, "raft log: raft-wal, fsync in place")
	}
	switch {
	case s.cfg.Dev:
		out = append(out, "snapshots: in memory (dev)")
	case s.cfg.SnapshotStore != nil:
		out = append(out, fmt.Sprintf("snapshots: injected %T", s.cfg.SnapshotStore))
	default:
		out = append(out, "snapshots: files in the data directory")
	}
	if s.cfg.Membership != nil {
		out = append(out, "catalog: registrations and serfHealth from gossip, reconciled by the leader")
	} else {
		out = append(out, "catalog: self-registration only")
	}
	if s.ownPool != nil {
		out = append(out, "forwarding: the server's own rpc pool")
	} else {
		out = append(out, "forwarding: the agent's rpc pool")
	}
	return out
}
