package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/internal/backoff"
	"github.com/tenurekv/tenure/model"
)

// leadership tracks this server's current leader term as the monitor sees it.
type leadership struct {
	mu      sync.Mutex
	term    *leaderTerm   // nil while not leading
	changed chan struct{} // closed and replaced at every transition
}

// leaderTerm is one stretch of leadership. ready closes once the term's
// barrier has passed and its TTL timers are armed: from then on this server
// has applied every entry committed before it took office.
type leaderTerm struct {
	stop  chan struct{}
	ready chan struct{}
	done  chan struct{}
	// members names the members whose gossip status changed (Membership).
	members chan string
}

// monitorLeadership starts a leader loop for each term and stops it on
// step-down. raft's LeaderCh keeps only the latest value, so a true while a
// term is running means leadership was lost and regained unseen: restart.
func (s *Server) monitorLeadership() {
	for {
		select {
		case isLeader := <-s.raft.LeaderCh():
			s.endTerm()
			if isLeader {
				s.beginTerm()
			}
		case <-s.shutdownCh:
			s.endTerm()
			return
		}
	}
}

func (s *Server) beginTerm() {
	t := &leaderTerm{stop: make(chan struct{}), ready: make(chan struct{}), done: make(chan struct{}),
		members: make(chan string, 256)}
	s.lead.mu.Lock()
	s.lead.term = t
	close(s.lead.changed)
	s.lead.changed = make(chan struct{})
	s.lead.mu.Unlock()
	if !s.goTracked(func() { s.leaderLoop(t) }) {
		close(t.done)
	}
}

// endTerm stops the running term, if any, and drops all leader memory:
// a deposed leader must never expire a session (S21).
func (s *Server) endTerm() {
	s.lead.mu.Lock()
	t := s.lead.term
	s.lead.term = nil
	close(s.lead.changed)
	s.lead.changed = make(chan struct{})
	s.lead.mu.Unlock()
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	s.leader.EndTerm()
	s.logger.Info("leadership lost: TTL timers stopped")
}

// leaderLoop establishes a term: a barrier so that every earlier entry is
// applied here, then fresh TTL deadlines for all sessions (S21), then
// failure detection, then readiness.
func (s *Server) leaderLoop(t *leaderTerm) {
	defer close(t.done)
	pause := backoff.New(s.cfg.retryBackoff, 32*s.cfg.retryBackoff)
	for {
		err := s.raft.Barrier(0).Error()
		if err == nil {
			break
		}
		s.logger.Warn("leader barrier failed; retrying", "error", err)
		if !s.sleep(pause.Next(), t.stop) {
			return
		}
	}
	select {
	case <-t.stop:
		return
	default:
	}
	s.leader.StartTerm()
	// The ACL records come before readiness, so no request this leader
	// decides misses them (S87); they are written through the core, which
	// does not wait for readiness.
	if s.cfg.ACL.Enabled && !s.initACL(t) {
		return
	}
	close(t.ready)
	s.logger.Info("leadership established", "ttl_sessions", s.ttlCount())
	if s.cfg.AnnounceLeader != nil {
		s.cfg.AnnounceLeader()
	}
	s.kickRegister()
	if s.cfg.Membership != nil {
		if !s.goTracked(func() { s.reconcileLoop(t) }) {
			return
		}
	}
	s.reapLoop(t.stop)
}

// initACL writes the ACL records of a new term (S87), retrying until they
// are written or the term ends; it reports whether the term goes on.
func (s *Server) initACL(t *leaderTerm) bool {
	pause := backoff.New(s.cfg.retryBackoff, 32*s.cfg.retryBackoff)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-t.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		refused, err := s.leader.InitACL(ctx, s.cfg.ACL.InitialManagement)
		cancel()
		<-stopped
		for _, r := range refused {
			// The state decided: retrying cannot help, and the term must
			// not wait on it.
			s.logger.Error("an ACL record was refused", "error", r)
		}
		if err == nil {
			s.logger.Info("ACL records written")
			return true
		}
		// The error names what failed, never a secret.
		s.logger.Warn("writing the ACL records failed; retrying", "error", err)
		if !s.sleep(pause.Next(), t.stop) {
			return false
		}
	}
}

func (s *Server) ttlCount() int {
	n := 0
	s.fsm.Read(func(st *model.State) {
		for _, se := range st.Sessions() {
			if se.TTLDuration() > 0 {
				n++
			}
		}
	})
	return n
}

// currentTerm returns the running term, or nil.
func (s *Server) currentTerm() *leaderTerm {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	return s.lead.term
}

// waitLeaderReady returns the current term once it is ready. It fails at
// once with ErrNotLeader on a follower; on a leader still establishing its
// term it waits, so that nothing is served from a state that may miss
// committed entries (a renew would wrongly answer 404, a lock-delay check
// would miss an invalidation).
func (s *Server) waitLeaderReady(ctx context.Context) (*leaderTerm, error) {
	for {
		s.lead.mu.Lock()
		t, changed := s.lead.term, s.lead.changed
		s.lead.mu.Unlock()
		if s.raft.State() != raft.Leader {
			return nil, ErrNotLeader
		}
		var ready chan struct{}
		if t != nil {
			ready = t.ready
		}
		select {
		case <-ready:
			return t, nil
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for leadership to be established: %w", ctx.Err())
		case <-s.shutdownCh:
			return nil, errShutdown
		}
	}
}
