package httpapi

import (
	"net/http"

	"github.com/tenurekv/tenure/model"
)

// The agent endpoints describe and act on the server the client talks to.

// agentSelf is GET /v1/agent/self, reduced to the fields clients read to
// learn the agent's node (api.Agent.NodeName). Always answered locally.
func (h *handler) agentSelf(c *call) error {
	node := h.origin(c)
	return writeJSON(c, http.StatusOK, map[string]map[string]any{
		"Config": {"Datacenter": h.opts.Datacenter, "NodeName": node, "Server": true, "Version": "tenure"},
		"Member": {"Name": node},
	})
}

// agentCheck is PUT /v1/agent/check/{pass,warn,fail}/<id>: a catalog write
// of the status of a check on the node of the server the client talked to
// (S48). It answers 200 with no body, as Consul does.
func (h *handler) agentCheck(status model.Health) func(c *call) error {
	return func(c *call) error {
		if err := checkLen("Check ID", c.arg, maxNameLen); err != nil {
			return err
		}
		node := h.origin(c)
		if here, err := h.leaderHere(c, nil); err != nil || !here {
			return err
		}
		var reg *model.Register
		h.b.Read(func(s *model.State) {
			n, okNode := s.Node(node)
			ch, okCheck := s.Check(model.CheckKey{Node: node, CheckID: c.arg})
			if okNode && okCheck {
				reg = &model.Register{Node: node, Address: n.Address,
					Checks: []model.CheckSpec{{CheckID: ch.CheckID, Name: ch.Name, Status: status}}}
			}
		})
		if reg == nil {
			return errorf(http.StatusNotFound,
				"Unknown check ID %q. Ensure that the check ID is passed, not the check name.", c.arg)
		}
		res, err := h.b.Apply(c.r.Context(), model.Command{Register: reg})
		if err != nil {
			return h.applyFailure(err)
		}
		if res.Err != nil {
			return h.rejection(res.Err)
		}
		return nil
	}
}
