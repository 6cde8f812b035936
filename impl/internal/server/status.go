package server

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/model"
)

// NodeName implements Backend.
func (s *Server) NodeName() string { return s.cfg.NodeName }

// Clock implements Backend.
func (s *Server) Clock() clock.Clock { return s.clock }

// Leader implements Backend: the leader's raft address, which is its
// server port (raft and forwarded requests share it), as raft knows it.
func (s *Server) Leader() (isLeader bool, leaderAddr string, known bool) {
	addr, id := s.raft.LeaderWithID()
	if s.raft.State() == raft.Leader {
		return true, string(addr), true
	}
	if id == "" || addr == "" {
		return false, "", false
	}
	return false, string(addr), true
}

// Read implements Backend.
func (s *Server) Read(fn func(st *model.State)) { s.fsm.Read(fn) }

// Changed implements Backend. Take the channel before reading.
func (s *Server) Changed() <-chan struct{} { return s.fsm.Changed() }

// LastContact implements Backend. raft keeps contact times on the time
// package's clock (the simulator's bubble clock), not on Clock. A follower
// that never heard from a leader reports the largest duration.
func (s *Server) LastContact() time.Duration {
	if s.raft.State() == raft.Leader {
		return 0
	}
	return time.Since(s.raft.LastContact())
}

// RaftLeaderAddr implements Backend: the leader's raft address, or "".
func (s *Server) RaftLeaderAddr() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// Peers implements Backend: the raft addresses of the configuration's servers.
func (s *Server) Peers() []string {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil
	}
	var out []string
	for _, srv := range f.Configuration().Servers {
		out = append(out, string(srv.Address))
	}
	return out
}
