package server

import (
	"context"
	"time"

	"github.com/tenurekv/tenure/model"
)

// reapMarks remembers which raft index had been applied when, so that the
// leader can tell which deletions are older than the reap window without
// storing a time in the replicated state (S52).
type reapMarks struct {
	window time.Duration
	marks  []reapMark // oldest first
}

type reapMark struct {
	at    time.Time
	index uint64
}

// due records that applied had been applied at now, and returns the highest
// index applied at least window before now (0 if none yet). Marks older than
// that one are no longer needed and are dropped, so at most window/interval
// marks are kept.
func (r *reapMarks) due(now time.Time, applied uint64) uint64 {
	r.marks = append(r.marks, reapMark{at: now, index: applied})
	cut := -1
	for i, m := range r.marks {
		if now.Sub(m.at) >= r.window {
			cut = i
		}
	}
	if cut < 0 {
		return 0
	}
	idx := r.marks[cut].index
	r.marks = r.marks[cut:]
	return idx
}

// reapLoop runs for one leader term: every ReapInterval it proposes a reap
// through the newest index that is at least ReapWindow old, if any deletion
// is that old. Marks start empty each term, so a new leader first reaps one
// window after it took over (a follower kept no marks), as Consul does.
func (s *Server) reapLoop(stop <-chan struct{}) {
	marks := reapMarks{window: s.cfg.ReapWindow}
	for s.sleep(s.cfg.ReapInterval, stop) {
		through := marks.due(s.clock.Now(), s.raft.AppliedIndex())
		if through == 0 || !s.hasReapable(through) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
		res, err := s.Apply(ctx, model.Command{Reap: &model.Reap{Index: through}})
		cancel()
		switch {
		case err != nil:
			s.logger.Warn("reap not applied; retrying next interval", "through", through, "error", err)
		case res.Err != nil:
			s.logger.Error("reap refused", "through", through, "error", res.Err)
		default:
			s.logger.Debug("reaped deletions", "through", through)
		}
	}
}

// hasReapable reports whether any deletion is at or below through.
func (s *Server) hasReapable(through uint64) bool {
	found := false
	s.fsm.Read(func(st *model.State) {
		for _, at := range st.Tombstones() {
			if at <= through {
				found = true
				return
			}
		}
	})
	return found
}
