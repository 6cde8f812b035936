package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
)

// RaftServer is one server of the raft configuration, as
// /v1/operator/raft/configuration reports it.
type RaftServer struct {
	// ID is the raft server ID (the node ID, S82); Node the server's
	// node name, or the ID when no member names it.
	ID, Node, Address string
	Leader            bool
	Voter             bool
}

// RaftConfiguration is the latest raft configuration and its index.
func (s *Server) RaftConfiguration() ([]RaftServer, uint64, error) {
	fut := s.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, 0, fmt.Errorf("raft configuration: %w", err)
	}
	leader, _ := s.raft.LeaderWithID()
	names := s.serverNames()
	var out []RaftServer
	for _, srv := range fut.Configuration().Servers {
		node := names[string(srv.ID)]
		if node == "" {
			node = string(srv.ID)
		}
		out = append(out, RaftServer{ID: string(srv.ID), Node: node, Address: string(srv.Address),
			Leader: srv.Address == leader, Voter: srv.Suffrage == raft.Voter})
	}
	return out, fut.Index(), nil
}

// serverNames maps raft server IDs to node names: this server's own, and
// every server gossip knows (under its node ID and, for entries from
// before node IDs, its name).
func (s *Server) serverNames() map[string]string {
	names := map[string]string{s.localID(): s.cfg.NodeName, s.cfg.raftID(): s.cfg.NodeName}
	if s.cfg.Membership == nil {
		return names
	}
	for _, m := range s.cfg.Membership.Members() {
		if m.Server {
			names[reconcile.RaftID(m)] = m.Name
			names[m.Name] = m.Name
		}
	}
	return names
}

// RaftStats are raft's counters (state, term, indexes, peers, …).
func (s *Server) RaftStats() map[string]string { return s.raft.Stats() }

// LastIndex is the last raft index this server has in its log.
func (s *Server) LastIndex() uint64 { return s.raft.LastIndex() }

// errPeerNotFound is RemovePeer's answer for a server the configuration
// does not list.
var errPeerNotFound = errors.New("not found in the Raft configuration")

// RemovePeer removes a server from raft by ID, or by address when id is
// empty (DELETE /v1/operator/raft/peer). Only the leader can.
func (s *Server) RemovePeer(id, address string) error {
	servers, _, err := s.RaftConfiguration()
	if err != nil {
		return err
	}
	for _, srv := range servers {
		if (id != "" && srv.ID == id) || (id == "" && srv.Address == address) {
			if err := s.raft.RemoveServer(raft.ServerID(srv.ID), 0, 10*time.Second).Error(); err != nil {
				if errors.Is(err, raft.ErrNotLeader) {
					return ErrNotLeader
				}
				return fmt.Errorf("remove raft peer %s: %w", srv.ID, err)
			}
			return nil
		}
	}
	if id != "" {
		return fmt.Errorf("id %q was %w", id, errPeerNotFound)
	}
	return fmt.Errorf("address %q was %w", address, errPeerNotFound)
}
