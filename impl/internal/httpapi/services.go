package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/model"
)

// The service reads of the catalog and health endpoints (S55, S59). Each is
// a blocking read served per consistency mode like every other read, and
// answers [] (or {}) rather than null when nothing matches.

// decodeRegisterBody reads a catalog register body, which may be larger
// than other JSON bodies (a service and its checks' output).
func decodeRegisterBody(c *call, v any) ([]byte, error) {
	body, err := readBody(c, maxRegisterBody, bodyOver(maxRegisterBody))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, errorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}
	return body, nil
}

// catalogServices is GET /v1/catalog/services: service name → its tags.
func (h *handler) catalogServices(c *call) error {
	q, meta, err := readParams(c)
	if err != nil {
		return err
	}
	if q.filter, err = h.filterParam(c, onServiceNodes); err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		everything := a.NodeReadAll() && a.ServiceReadAll()
		if q.filter == nil && everything {
			return view{index: s.Tables().Services, body: meta.serviceNames(s)}
		}
		// Consul filters the instances (by ACLs, S90, then by the
		// expression), then groups what is left by name.
		out := serviceInstancesJSON{}
		filtered := false
		for _, sv := range s.ServiceList("") {
			n, _ := s.Node(sv.Node)
			switch {
			case !meta.matches(n.Meta):
			case !everything && !instanceReadable(a, n.Name, sv.Service):
				filtered = true
			default:
				out = append(out, h.toServiceNode(model.ServiceInstance{Node: n, Service: sv}))
			}
		}
		if q.filter == nil {
			return view{index: s.Tables().Services, body: serviceTags(out), filtered: filtered}
		}
		return view{index: s.Tables().Services, body: out, filtered: filtered}
	})
}

// catalogService is GET /v1/catalog/service/<name>[?tag=…]: its instances.
func (h *handler) catalogService(c *call) error {
	tags, err := tagParams(c.query())
	if err != nil {
		return err
	}
	meta, err := nodeMetaParams(c.query())
	if err != nil {
		return err
	}
	return h.serveArgReadOn(c, "Missing service name", onServiceNodes, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		out := []serviceNodeJSON{}
		filtered := false
		for _, in := range s.ServiceInstances(c.arg) {
			switch {
			case !hasTags(in.Service.Tags, tags) || !meta.matches(in.Node.Meta):
			case !instanceReadable(a, in.Node.Name, in.Service.Service):
				filtered = true // S90
			default:
				out = append(out, h.toServiceNode(in))
			}
		}
		sortNear(s, h.nearParam(c), out, func(n serviceNodeJSON) string { return n.Node }) // near.go
		return view{index: max(s.Tables().Nodes, s.Tables().Services), body: out, filtered: filtered}
	})
}

// catalogNodeServices is GET /v1/catalog/node-services/<node>:
// {"Node":…,"Services":[…]}; both null for an unknown node, as Consul answers.
func (h *handler) catalogNodeServices(c *call) error {
	return h.serveArgReadOn(c, "Missing node name", onNodeServices, func(s *model.State) view {
		index := max(s.Tables().Nodes, s.Tables().Services)
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		n, ok := s.Node(c.arg)
		if !ok {
			return view{index: index, body: nodeServiceListJSON{}}
		}
		if !nodeReadable(a, n.Name) {
			// S90: as an unknown node, but said to be filtered.
			return view{index: index, body: nodeServiceListJSON{}, filtered: true}
		}
		services := []nodeServiceJSON{}
		filtered := false
		for _, sv := range s.ServiceList(n.Name) {
			if !a.Allowed(acl.ResourceService, sv.Service, acl.AccessRead) {
				filtered = true
				continue
			}
			services = append(services, toNodeService(sv))
		}
		return view{index: index, body: nodeServiceListJSON{h.toNode(n), services}, filtered: filtered}
	})
}

// nodeServiceListJSON is structs.NodeServiceList: a node and its services.
type nodeServiceListJSON struct {
	Node     *nodeJSON
	Services []nodeServiceJSON
}

// healthService is GET /v1/health/service/<name>[?passing][&tag=…]: each
// instance with its node and the checks that decide its health, node checks
// included (CONSUL.md §14).
func (h *handler) healthService(c *call) error {
	v := c.query()
	tags, err := tagParams(v)
	if err != nil {
		return err
	}
	meta, err := nodeMetaParams(v)
	if err != nil {
		return err
	}
	passing := false
	if vals, ok := v["passing"]; ok {
		passing = true
		if vals[0] != "" {
			if passing, err = strconv.ParseBool(vals[0]); err != nil {
				return errorf(http.StatusBadRequest, "Invalid value for ?passing")
			}
		}
	}
	return h.serveArgReadOn(c, "Missing service name", onHealthEntry, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		out := []healthEntryJSON{}
		filtered := false
		for _, in := range s.ServiceInstances(c.arg) {
			switch {
			case !hasTags(in.Service.Tags, tags) || !meta.matches(in.Node.Meta):
			case !instanceReadable(a, in.Node.Name, in.Service.Service):
				filtered = true // S90; Consul drops by ACLs before ?passing
			case passing && !allPassing(in.Checks):
			default:
				out = append(out, h.toHealthEntry(s, in))
			}
		}
		sortNear(s, h.nearParam(c), out, func(e healthEntryJSON) string { return e.Node.Node }) // near.go
		return view{index: max(s.Tables().Nodes, s.Tables().Services, s.Tables().Checks), body: out, filtered: filtered}
	})
}

// healthChecks is GET /v1/health/checks/<service>: the checks of the
// service's instances, without node checks.
func (h *handler) healthChecks(c *call) error {
	meta, err := nodeMetaParams(c.query())
	if err != nil {
		return err
	}
	return h.serveArgReadOn(c, "Missing service name", onChecks, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		all := meta.checks(s, s.ServiceChecks(c.arg))
		checks, filtered := readableChecks(a, all)
		out := toChecks(s, checks)
		sortNear(s, h.nearParam(c), out, func(ch checkJSON) string { return ch.Node }) // near.go
		v := view{index: s.Tables().Checks, body: out, filtered: filtered}
		if filtered {
			// Consul applies ?filter to a service's checks before ACLs.
			var dropped []model.Check
			for _, ch := range all {
				if !checkReadable(a, ch) {
					dropped = append(dropped, ch)
				}
			}
			v.dropped = toChecks(s, dropped)
		}
		return v
	})
}

// healthEntryJSON is structs.CheckServiceNode.
type healthEntryJSON struct {
	Node    *nodeJSON
	Service nodeServiceJSON
	Checks  []checkJSON
}

func (h *handler) toHealthEntry(s *model.State, in model.ServiceInstance) healthEntryJSON {
	sv := toNodeService(in.Service)
	sv.Port = defaultPort(in.Service)
	return healthEntryJSON{Node: h.toNode(in.Node), Service: sv,
		Checks: toChecks(s, nodeChecksFirst(in.Checks))}
}

// nodeChecksFirst orders an instance's checks as Consul lists them: the
// node's checks, then the service's, each kept in check-ID order. Readers
// that take Checks[0] as the node's gossip health see the same check.
func nodeChecksFirst(checks []model.Check) []model.Check {
	out := make([]model.Check, 0, len(checks))
	for _, c := range checks {
		if c.ServiceID == "" {
			out = append(out, c)
		}
	}
	for _, c := range checks {
		if c.ServiceID != "" {
			out = append(out, c)
		}
	}
	return out
}

func (h *handler) toServiceNode(in model.ServiceInstance) serviceNodeJSON {
	sv := in.Service
	d := sv.ServiceDetails
	return serviceNodeJSON{ID: in.Node.ID, Node: in.Node.Name, Address: in.Node.Address, Datacenter: h.opts.Datacenter,
		TaggedAddresses: in.Node.TaggedAddresses, NodeMeta: in.Node.Meta, ServiceKind: d.Kind,
		ServiceID: sv.ServiceID, ServiceName: sv.Service, ServiceTags: orEmpty(sv.Tags),
		ServiceAddress: sv.Address, ServiceTaggedAddresses: d.TaggedAddresses, ServiceWeights: serviceWeights(d.Weights),
		ServiceMeta: orEmptyMap(sv.Meta), ServicePort: defaultPort(sv), ServicePorts: d.Ports, ServiceSocketPath: d.SocketPath,
		ServiceEnableTagOverride: d.EnableTagOverride, ServiceProxy: catalogwire.ProxyJSON(d.Proxy),
		ServiceLocality: d.Locality, CreateIndex: sv.CreateIndex, ModifyIndex: sv.ModifyIndex}
}

// tagParams reads the repeatable ?tag filter, bounded like a service's tags.
func tagParams(v url.Values) ([]string, error) {
	tags := v["tag"]
	if err := tagLimits("Tag filter", tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// hasTags: the instance carries every wanted tag, compared ignoring case as
// Consul's tag filter does.
func hasTags(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, t := range have {
			if strings.EqualFold(t, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// allPassing is ?passing's filter: any check not passing, warning included,
// drops the instance.
func allPassing(checks []model.Check) bool {
	for _, c := range checks {
		if c.Status != model.HealthPassing {
			return false
		}
	}
	return true
}
