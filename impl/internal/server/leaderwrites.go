package server

import (
	"context"
	"errors"

	"github.com/tenurekv/tenure/internal/backoff"
	"github.com/tenurekv/tenure/model"
)

// sessionsExpired is the TTL book's expiry hook: each session is destroyed
// through raft, exactly as an explicit destroy (S14, lock-delay included).
func (s *Server) sessionsExpired(ids []string) {
	t := s.currentTerm()
	if t == nil {
		return
	}
	for _, id := range ids {
		s.logger.Debug("session TTL expired", "session", id)
		s.goTracked(func() {
			s.leaderWrite(t, "destroy expired session "+id, func() (model.Command, bool) {
				// A session invalidated meanwhile needs no destroy.
				return model.Command{DestroySession: &model.DestroySession{ID: id}}, s.leader.SessionLive(id)
			})
		})
	}
}

// leaderWrite proposes next() until it succeeds, next says there is nothing
// left to do, or term t ends. Failures back off on the server's clock from
// retryBackoff up to 32 times it; Consul retries its TTL destroy similarly.
func (s *Server) leaderWrite(t *leaderTerm, what string, next func() (model.Command, bool)) {
	pause := backoff.New(s.cfg.retryBackoff, 32*s.cfg.retryBackoff)
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		cmd, ok := next()
		if !ok {
			return
		}
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
		res, err := s.Apply(ctx, cmd)
		cancel()
		<-stopped
		if err == nil {
			if res.Err != nil {
				// The model's answer is deterministic: retrying cannot help.
				s.logger.Error("leader write rejected", "what", what, "error", res.Err)
			}
			return
		}
		if errors.Is(err, ErrNotLeader) || errors.Is(err, errShutdown) {
			return
		}
		wait := pause.Next()
		s.logger.Warn("leader write failed; retrying", "what", what, "error", err, "backoff", wait)
		if !s.sleep(wait, t.stop) {
			return
		}
	}
}
