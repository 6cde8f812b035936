package impl

import (
	"errors"
	"fmt"
)

// errStopped is what a server reports once it has stopped itself.
var errStopped = errors.New("server stopped: its raft log cannot reach its disk")

// watchLogSync stops the server at the first failed fsync of its raft log.
// A leader's FSM would stop it at its next apply anyway; a follower's
// failed writes reach no apply, and it would stay in the cluster, voting,
// with a log that can no longer grow.
func (s *Server) watchLogSync(failed <-chan struct{}, cause func() error) {
	select {
	case <-failed:
		s.fatal(fmt.Errorf("%w: %w", errStopped, cause()))
	case <-s.shutdownCh:
	}
}

// fatal stops the server for good, once: Config.Fatal if set (the
// simulator crashes the node), else a panic, which ends the process as
// etcd and PostgreSQL end theirs on a failed fsync.
func (s *Server) fatal(err error) {
	s.fatalOnce.Do(func() {
		s.logger.Error("stopping", "error", err)
		if s.cfg.Fatal == nil {
			panic(err.Error())
		}
		s.cfg.Fatal(err)
	})
}
