package httpapi

import (
	"errors"
	"net/http"

	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// sessionCreate is PUT /v1/session/create (S1-S9).
func (h *handler) sessionCreate(c *call) error {
	body, err := readBody(c, maxJSONBody, bodyTooLarge)
	if err != nil {
		return err
	}
	cs, err := decodeSessionCreate(body, h.origin(c))
	if err != nil {
		return errorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}
	if me := createLimits(cs); me != nil {
		return h.rejection(me)
	}
	if me := validateCreate(cs); me != nil {
		return h.rejection(me)
	}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	res, err := h.b.Apply(c.r.Context(), model.Command{CreateSession: &cs})
	if err != nil {
		return h.applyFailure(err)
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	return writeJSON(c, http.StatusOK, struct{ ID string }{res.SessionID})
}

// sessionDestroy is PUT /v1/session/destroy/<id>: true, also for an unknown
// ID (S13).
func (h *handler) sessionDestroy(c *call) error {
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing session")
	}
	if err := checkLen("Session ID", c.arg, maxNameLen); err != nil {
		return err
	}
	if here, err := h.leaderHere(c, nil); err != nil || !here {
		return err
	}
	res, err := h.b.Apply(c.r.Context(), model.Command{DestroySession: &model.DestroySession{ID: c.arg}})
	if err != nil {
		return h.applyFailure(err)
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	return writeJSON(c, http.StatusOK, true)
}

// sessionRenew is PUT /v1/session/renew/<id> (S20). It always runs on the
// leader, even under ?stale, because only the leader's timer counts (S18).
func (h *handler) sessionRenew(c *call) error {
	if _, err := parseQuery(c.query()); err != nil {
		return err
	}
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing session")
	}
	if err := checkLen("Session ID", c.arg, maxNameLen); err != nil {
		return err
	}
	if here, err := h.leaderHere(c, nil); err != nil || !here {
		return err
	}
	s, err := h.b.Renew(c.r.Context(), c.arg)
	if errors.Is(err, leader.ErrSessionNotFound) {
		return errorf(http.StatusNotFound, "Session id '%s' not found", c.arg)
	}
	if err != nil {
		return h.applyFailure(err)
	}
	return writeJSON(c, http.StatusOK, []sessionJSON{toSession(s)})
}

// sessionInfo is GET /v1/session/info/<id>: [session] or [] (CONSUL.md §8).
func (h *handler) sessionInfo(c *call) error {
	return h.serveArgRead(c, "Missing session", func(s *model.State) view {
		out := []sessionJSON{}
		if se, ok := s.Session(c.arg); ok {
			out = append(out, toSession(se))
		}
		return view{index: s.Tables().Sessions, body: out}
	})
}

// sessionNode is GET /v1/session/node/<node>.
func (h *handler) sessionNode(c *call) error {
	return h.serveArgRead(c, "Missing node name", func(s *model.State) view {
		return view{index: s.Tables().Sessions, body: toSessions(s.SessionList(c.arg))}
	})
}

// sessionList is GET /v1/session/list.
func (h *handler) sessionList(c *call) error {
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		return view{index: s.Tables().Sessions, body: toSessions(s.SessionList(""))}
	})
}
