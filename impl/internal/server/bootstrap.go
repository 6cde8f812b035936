package server

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
)

// bootstrapLoop forms the raft cluster from gossip, as Consul's
// -bootstrap-expect does (CONSUL.md §13): once BootstrapExpect alive
// servers, none of them already in a cluster and all expecting the same
// number, have joined the pool, every one of them bootstraps the same
// configuration. A server that finds a cluster waits to be added as a
// voter by its leader. Either way the pool is then told this server
// belongs to a cluster.
func (s *Server) bootstrapLoop() {
	for {
		wake := s.bootstrapWake
		if s.inCluster() {
			s.markBootstrapped()
			return
		}
		voters, ok, err := reconcile.BootstrapSet(s.cfg.Membership.Members(), s.cfg.BootstrapExpect)
		switch {
		case s.cfg.BootstrapExpect <= 0:
			// Nothing to form: wait for a leader to add this server.
		case err != nil:
			s.logger.Error("not bootstrapping", "error", err)
		case ok:
			var conf raft.Configuration
			for _, v := range voters {
				conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(v.ID), Address: raft.ServerAddress(v.Address)})
			}
			s.logger.Info("bootstrapping the raft cluster", "servers", len(voters))
			if err := s.raft.BootstrapCluster(conf).Error(); err != nil {
				s.logger.Error("bootstrap failed", "error", err)
			}
			continue
		}
		// Being added by a leader changes the configuration without any
		// gossip change: look again after a while too.
		again := make(chan struct{})
		timer := s.clock.AfterFunc(bootstrapRecheck, func() { close(again) })
		select {
		case <-wake:
		case <-again:
		case <-s.shutdownCh:
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

// bootstrapRecheck is how often a server not yet in a cluster looks again
// without news from gossip.
const bootstrapRecheck = time.Second

// inCluster reports whether this server's raft configuration lists anyone.
func (s *Server) inCluster() bool {
	fut := s.raft.GetConfiguration()
	return fut.Error() == nil && len(fut.Configuration().Servers) > 0
}

func (s *Server) markBootstrapped() {
	if err := s.cfg.Membership.MarkBootstrapped(); err != nil {
		s.logger.Warn("telling the pool this server is in a cluster failed", "error", err)
	}
}
