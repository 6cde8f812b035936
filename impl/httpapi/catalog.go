package httpapi

import (
	"encoding/json"

	"net/http"

	"github.com/tenurekv/tenure/model"
)

// The catalog and health endpoints cover what sessions depend on: nodes and their
// checks (S47, S48). Services are outside tenure's scope, so a request
// naming one is refused rather than half-applied.

// registerBody is the part of structs.RegisterRequest tenure reads. Unknown
// fields (TaggedAddresses, NodeMeta, …) are ignored.
type registerBody struct {
	Node    string
	Address string
	Service any
	Check   *checkBody
	Checks  []*checkBody
}

type checkBody struct {
	Node      string
	CheckID   string
	Name      string
	Status    model.Health
	ServiceID string
}

type deregisterBody struct {
	Node      string
	CheckID   string
	ServiceID string
}

func decodeJSONBody(c *call, v any) ([]byte, error) {
	body, err := readBody(c, maxJSONBody, bodyTooLarge)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, errorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}
	return body, nil
}

// toRegister validates a register body and builds the command.
func toRegister(b registerBody) (model.Register, error) {
	reg := model.Register{Node: b.Node, Address: b.Address}
	switch {
	case b.Node == "":
		return reg, errorf(http.StatusBadRequest, "Must provide node")
	case b.Address == "":
		return reg, errorf(http.StatusBadRequest, "Must provide address")
	case b.Service != nil:
		return reg, errorf(http.StatusBadRequest, "Services are not supported: tenure models nodes and checks only")
	}
	checks := b.Checks
	if b.Check != nil {
		checks = append(checks, b.Check)
	}
	for _, ch := range checks {
		if ch == nil {
			continue
		}
		if ch.Node != "" && ch.Node != b.Node {
			return reg, errorf(http.StatusBadRequest, "Check node %q does not match node %q", ch.Node, b.Node)
		}
		if ch.ServiceID != "" {
			return reg, errorf(http.StatusBadRequest, "Service checks are not supported: tenure models node checks only")
		}
		id := ch.CheckID
		if id == "" {
			id = ch.Name // Consul's checkPreApply
		}
		status := ch.Status
		if status == "" {
			// Consul stores a check registered without a status as critical
			// (state store ensureCheckTxn), which invalidates sessions bound to it.
			status = model.HealthCritical
		}
		if !status.Valid() {
			return reg, errorf(http.StatusBadRequest, "Invalid check status '%s'", status)
		}
		reg.Checks = append(reg.Checks, model.CheckSpec{CheckID: id, Name: ch.Name, Status: status})
	}
	return reg, nil
}

// catalogRegister is PUT /v1/catalog/register: true.
func (h *handler) catalogRegister(c *call) error {
	var b registerBody
	body, err := decodeJSONBody(c, &b)
	if err != nil {
		return err
	}
	if err := registerLimits(b); err != nil {
		return err
	}
	reg, err := toRegister(b)
	if err != nil {
		return err
	}
	return h.catalogWrite(c, body, model.Command{Register: &reg})
}

// catalogDeregister is PUT /v1/catalog/deregister (a node, or one check): true.
func (h *handler) catalogDeregister(c *call) error {
	var b deregisterBody
	body, err := decodeJSONBody(c, &b)
	if err != nil {
		return err
	}
	switch {
	case b.Node == "":
		return errorf(http.StatusBadRequest, "Must provide node")
	case b.ServiceID != "":
		return errorf(http.StatusBadRequest, "Services are not supported: tenure models nodes and checks only")
	}
	if err := checkLen("Node name", b.Node, maxNameLen); err != nil {
		return err
	}
	if err := checkLen("Check ID", b.CheckID, maxNameLen); err != nil {
		return err
	}
	return h.catalogWrite(c, body, model.Command{Deregister: &model.Deregister{Node: b.Node, CheckID: b.CheckID}})
}

func (h *handler) catalogWrite(c *call, body []byte, cmd model.Command) error {
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	res, err := h.b.Apply(c.r.Context(), cmd)
	if err != nil {
		return h.applyFailure(err)
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	return writeJSON(c, http.StatusOK, true)
}

// catalogNodes is GET /v1/catalog/nodes.
func (h *handler) catalogNodes(c *call) error {
	q, err := parseQuery(c.r.URL.Query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		out := []nodeJSON{}
		for _, n := range s.NodeList() {
			out = append(out, *h.toNode(n))
		}
		return view{index: s.Tables().Nodes, body: out}
	})
}

// catalogNode is GET /v1/catalog/node/<node>: {"Node":…,"Services":{}}, or
// null for an unknown node, as Consul answers.
func (h *handler) catalogNode(c *call) error {
	return h.serveArgRead(c, "Missing node name", func(s *model.State) view {
		n, ok := s.Node(c.arg)
		if !ok {
			return view{index: s.Tables().Nodes, body: json.RawMessage("null")}
		}
		return view{index: s.Tables().Nodes, body: nodeServicesJSON{
			Node:     h.toNode(n),
			Services: map[string]any{},
		}}
	})
}

func (h *handler) toNode(n model.Node) *nodeJSON {
	return &nodeJSON{Node: n.Name, Address: n.Address, Datacenter: h.opts.Datacenter,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex}
}

// healthNode is GET /v1/health/node/<node>.
func (h *handler) healthNode(c *call) error {
	return h.serveArgRead(c, "Missing node name", func(s *model.State) view {
		return view{index: s.Tables().Checks, body: toChecks(s.CheckList(c.arg, ""))}
	})
}

// healthState is GET /v1/health/state/<any|passing|warning|critical>.
func (h *handler) healthState(c *call) error {
	q, err := parseQuery(c.r.URL.Query())
	if err != nil {
		return err
	}
	state := model.Health(c.arg)
	switch {
	case state == "":
		return errorf(http.StatusBadRequest, "Missing check state")
	case state == "any":
		state = ""
	case !state.Valid():
		return errorf(http.StatusBadRequest, "Invalid check state '%s'", c.arg)
	}
	return h.serveRead(c, q, func(s *model.State) view {
		return view{index: s.Tables().Checks, body: toChecks(s.CheckList("", state))}
	})
}
