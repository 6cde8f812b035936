package httpapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hashicorp/go-uuid"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/model"
)

// The catalog and health endpoints cover what sessions depend on: nodes,
// their services and the checks of both (S47, S48, S55). The service reads
// are in services.go.

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
func toRegister(b catalogwire.Register) (model.Register, error) {
	reg := model.Register{Node: b.Node, ID: b.ID, Address: b.Address, TaggedAddresses: b.TaggedAddresses,
		NodeMeta: b.NodeMeta, SkipNodeUpdate: b.SkipNodeUpdate}
	switch {
	case b.Node == "":
		return reg, errorf(http.StatusBadRequest, "Must provide node")
	case b.Address == "" && !b.SkipNodeUpdate:
		// A register that leaves the node alone needs no address (a new
		// node then has none), as in Consul (S62).
		return reg, errorf(http.StatusBadRequest, "Must provide address")
	}
	if b.ID != "" {
		// A node ID is a UUID; the catalog finds renamed nodes by it (S62).
		if _, err := uuid.ParseUUID(b.ID); err != nil {
			return reg, &model.Error{Kind: model.ErrInvalid, Msg: "Bad node ID: " + err.Error()}
		}
	}
	if sv := b.Service; sv != nil {
		// The model checks the name too (S55); checked here, a bad service
		// costs no index. The ID defaults to the name in the model.
		switch {
		case sv.Service == "" && sv.ID != "":
			return reg, errorf(http.StatusBadRequest, "Must provide service name (Service.Service) when service ID is provided")
		case sv.Service == "":
			return reg, errorf(http.StatusBadRequest, "Must provide service name")
		}
		if p := model.ServiceMetaProblem(sv.Kind, sv.Meta); p != "" {
			return reg, errorf(http.StatusBadRequest, "Invalid Service Meta for node %s and serviceID %s: %s",
				b.Node, cmp.Or(sv.ID, sv.Service), p)
		}
		if errs := sv.Validate(); len(errs) > 0 {
			return reg, errorf(http.StatusBadRequest, "%s", catalogwire.Reasons(errs))
		}
		details, err := sv.Details()
		if err != nil {
			return reg, errorf(http.StatusBadRequest, "Invalid service: %v", err)
		}
		reg.Services = []model.ServiceSpec{{ID: sv.ID, Service: sv.Service, Tags: sv.Tags,
			Address: sv.Address, Port: sv.Port, Meta: sv.Meta, ServiceDetails: details}}
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
		def, err := decodeDefinition(ch.Definition, false, "Request decode failed")
		if err != nil {
			return reg, err
		}
		typ := ch.Type
		if typ == "" {
			// Consul's catalog register names the kind a definition
			// describes, for checks not registered by an agent.
			typ = definitionType(def)
		}
		reg.Checks = append(reg.Checks, model.CheckSpec{CheckID: id, Name: ch.Name, Status: status,
			Notes: ch.Notes, Output: ch.Output, ServiceID: ch.ServiceID, Type: typ, Definition: def})
	}
	return reg, nil
}

// catalogRegister is PUT /v1/catalog/register: true.
func (h *handler) catalogRegister(c *call) error {
	var b catalogwire.Register
	body, err := decodeRegisterBody(c, &b)
	if err != nil {
		return err
	}
	if err := h.checkDC(b.Datacenter); err != nil {
		return err
	}
	if err := registerLimits(b); err != nil {
		return err
	}
	reg, err := toRegister(b)
	var refused *model.Error
	if errors.As(err, &refused) {
		return h.rejection(refused)
	}
	if err != nil {
		return err
	}
	return h.catalogWrite(c, body, model.Command{Register: &reg})
}

// catalogDeregister is PUT /v1/catalog/deregister (a node, one service with
// its checks, or one check): true. ServiceID wins over CheckID, as in Consul.
func (h *handler) catalogDeregister(c *call) error {
	var b catalogwire.Deregister
	body, err := decodeJSONBody(c, &b)
	if err != nil {
		return err
	}
	if err := h.checkDC(b.Datacenter); err != nil {
		return err
	}
	if b.Node == "" {
		return errorf(http.StatusBadRequest, "Must provide node")
	}
	for _, f := range []struct{ what, value string }{
		{"Node name", b.Node}, {"Check ID", b.CheckID}, {"Service ID", b.ServiceID},
	} {
		if err := checkLen(f.what, f.value, maxNameLen); err != nil {
			return err
		}
	}
	return h.catalogWrite(c, body, model.Command{Deregister: &model.Deregister{Node: b.Node, ServiceID: b.ServiceID, CheckID: b.CheckID}})
}

func (h *handler) catalogWrite(c *call, body []byte, cmd model.Command) error {
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	if err := h.vetCatalogWrite(c, cmd); err != nil {
		return err // S90
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
	q, meta, err := readParams(c)
	if err != nil {
		return err
	}
	if q.filter, err = h.filterParam(c, onNodes); err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		out := []nodeJSON{}
		filtered := false
		for _, n := range s.NodeList() {
			switch {
			case !meta.matches(n.Meta):
			case !nodeReadable(a, n.Name):
				filtered = true // S90
			default:
				out = append(out, *h.toNode(n))
			}
		}
		sortNear(s, h.nearParam(c), out, func(n nodeJSON) string { return n.Node }) // near.go
		return view{index: s.Tables().Nodes, body: out, filtered: filtered}
	})
}

// catalogNode is GET /v1/catalog/node/<node>: {"Node":…,"Services":{ID:
// service}}, or null for an unknown node, as Consul answers.
func (h *handler) catalogNode(c *call) error {
	return h.serveArgReadOn(c, "Missing node name", onNodeServices, func(s *model.State) view {
		index := max(s.Tables().Nodes, s.Tables().Services)
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		n, ok := s.Node(c.arg)
		if !ok {
			return view{index: index, body: json.RawMessage("null")}
		}
		if !nodeReadable(a, n.Name) {
			// S90: a node the caller may not read is answered as unknown.
			return view{index: index, body: json.RawMessage("null"), filtered: true}
		}
		services := map[string]nodeServiceJSON{}
		filtered := false
		for _, sv := range s.ServiceList(n.Name) {
			if !a.Allowed(acl.ResourceService, sv.Service, acl.AccessRead) {
				filtered = true
				continue
			}
			services[sv.ServiceID] = toNodeService(sv)
		}
		return view{index: index, body: nodeServicesJSON{Node: h.toNode(n), Services: services}, filtered: filtered}
	})
}

func (h *handler) toNode(n model.Node) *nodeJSON {
	return &nodeJSON{ID: n.ID, Node: n.Name, Address: n.Address, Datacenter: h.opts.Datacenter,
		TaggedAddresses: n.TaggedAddresses, Meta: n.Meta, CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex}
}

// healthNode is GET /v1/health/node/<node>.
func (h *handler) healthNode(c *call) error {
	return h.serveArgReadOn(c, "Missing node name", onChecks, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		checks, filtered := readableChecks(a, s.CheckList(c.arg, ""))
		return view{index: s.Tables().Checks, body: toChecks(s, checks), filtered: filtered}
	})
}

// healthState is GET /v1/health/state/<any|passing|warning|critical>.
func (h *handler) healthState(c *call) error {
	q, meta, err := readParams(c)
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
	if q.filter, err = h.filterParam(c, onChecks); err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		checks, filtered := readableChecks(a, meta.checks(s, s.CheckList("", state)))
		out := toChecks(s, checks)
		sortNear(s, h.nearParam(c), out, func(ch checkJSON) string { return ch.Node }) // near.go
		return view{index: s.Tables().Checks, body: out, filtered: filtered}
	})
}
