package httpapi

import (
	"errors"
	"net/http"

	"github.com/tenurekv/tenure/acl"
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
	// With ACLs on, the token is decided before the fields are (Consul's
	// order), so a caller without session:write learns nothing of them.
	aclOn := h.opts.ACL.enabled()
	if !aclOn {
		if me := validateCreate(cs); me != nil {
			return h.rejection(me)
		}
	}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	if aclOn {
		if err := h.allowed(c, acl.ResourceSession, cs.Node, acl.AccessWrite); err != nil {
			return err // S85
		}
		if me := validateCreate(cs); me != nil {
			return h.rejection(me)
		}
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
	if err := h.sessionWrite(c, c.arg); err != nil {
		return err // S85
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
	if err := h.sessionWrite(c, c.arg); err != nil {
		return err // S85
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
		var list []model.Session
		if se, ok := s.Session(c.arg); ok {
			list = append(list, se)
		}
		return h.sessionsView(c, s, list)
	})
}

// sessionNode is GET /v1/session/node/<node>.
func (h *handler) sessionNode(c *call) error {
	return h.serveArgRead(c, "Missing node name", func(s *model.State) view {
		return h.sessionsView(c, s, s.SessionList(c.arg))
	})
}

// sessionList is GET /v1/session/list.
func (h *handler) sessionList(c *call) error {
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		return h.sessionsView(c, s, s.SessionList(""))
	})
}

// sessionWrite decides session:write on an existing session's node, as a
// destroy and a renew need (S85); an unknown session is no one's, so it is
// left to the operation (a no-op destroy, a 404 renew).
func (h *handler) sessionWrite(c *call, id string) error {
	if !h.opts.ACL.enabled() {
		return nil
	}
	var (
		se model.Session
		ok bool
	)
	h.b.Read(func(s *model.State) { se, ok = s.Session(id) })
	if !ok {
		return nil
	}
	return h.allowed(c, acl.ResourceSession, se.Node, acl.AccessWrite)
}

// sessionsView is a session read's answer: the sessions the caller may
// read (session:read on their node), the others filtered out (S85).
func (h *handler) sessionsView(c *call, s *model.State, list []model.Session) view {
	a, err := h.authz(c, s)
	if err != nil {
		return view{fail: err}
	}
	var kept []model.Session
	for _, se := range list {
		if a.Allowed(acl.ResourceSession, se.Node, acl.AccessRead) {
			kept = append(kept, se)
		}
	}
	return view{index: s.Tables().Sessions, body: toSessions(kept), filtered: len(kept) < len(list)}
}
