package server

import (
	"context"
	"errors"
)

// WaitReady returns once this server's leader term is established, or at
// once when it does not lead (a follower decides with what it has). With
// ACLs on, a new leader writes the ACL records before its term is ready
// (S87), so a request it decides after this sees them.
func (s *Server) WaitReady(ctx context.Context) error {
	if _, err := s.waitLeaderReady(ctx); err != nil && !errors.Is(err, ErrNotLeader) {
		return err
	}
	return nil
}
