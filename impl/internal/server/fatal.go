package server

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
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

// stopOnStableError is the stable store as raft sees it. raft panics when
// it cannot save its term or vote; here the server stops instead
// (fatal: the same panic in production, a crash of the node in the
// simulator), and the raft goroutine that failed waits for the shutdown
// and then goes on as if the write had succeeded: the process is gone by
// then, and nothing it does reaches the disk.
type stopOnStableError struct {
	raft.StableStore
	s *Server
}

func (st stopOnStableError) Set(key, val []byte) error {
	return st.stopOn(st.StableStore.Set(key, val))
}

func (st stopOnStableError) SetUint64(key []byte, val uint64) error {
	return st.stopOn(st.StableStore.SetUint64(key, val))
}

func (st stopOnStableError) stopOn(err error) error {
	if err == nil {
		return nil
	}
	st.s.fatal(fmt.Errorf("%w: raft stable store: %w", errStopped, err))
	<-st.s.shutdownCh
	return nil
}
