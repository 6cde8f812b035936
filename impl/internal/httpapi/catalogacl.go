package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// The catalog and health endpoints under ACLs (S90). A register needs
// node:write on the node when it creates or changes it, service:write on
// each service it writes (and on one it overwrites by ID), node:write for a
// node check and service:write for a check of another existing service. A
// deregister needs node:write, or else service:write on what it removes. A
// read keeps what the caller may read: nodes by node:read, instances and
// checks by node:read on their node and service:read on their service.

// vetRegister decides a register over s, the state it would apply to, as
// Consul's catalog does before it applies one; nil allows it.
func vetRegister(a *acl.Authorizer, s *model.State, reg *model.Register) error {
	// Consul decides the services before the node.
	for _, sv := range reg.Services {
		if err := serviceWritable(a, sv); err != nil {
			return err
		}
	}
	n, exists := s.Node(reg.Node)
	if !exists || registerChangesNode(reg, n) {
		if err := a.Check(acl.ResourceNode, reg.Node, acl.AccessWrite); err != nil {
			return err
		}
	}
	inRequest := map[string]bool{}
	for _, sv := range reg.Services {
		id := sv.ID
		if id == "" {
			id = sv.Service
		}
		inRequest[id] = true
		if old, ok := s.Service(model.ServiceKey{Node: reg.Node, ServiceID: id}); ok && exists {
			if !a.Allowed(acl.ResourceService, old.Service, acl.AccessWrite) {
				// Overwriting another service by its ID: Consul says no
				// more than this.
				return &acl.PermissionDenied{}
			}
		}
	}
	for _, ch := range reg.Checks {
		switch {
		case ch.ServiceID == "":
			if err := a.Check(acl.ResourceNode, reg.Node, acl.AccessWrite); err != nil {
				return err
			}
		case inRequest[ch.ServiceID]:
			// Decided with the service above.
		default:
			other, ok := s.Service(model.ServiceKey{Node: reg.Node, ServiceID: ch.ServiceID})
			if !ok {
				// Unknown to the catalog: the apply refuses it with
				// Consul's text.
				continue
			}
			if err := a.Check(acl.ResourceService, other.Service, acl.AccessWrite); err != nil {
				return err
			}
		}
	}
	return nil
}

// serviceWritable is service:write on a registered service's name and, for
// a connect proxy, on the service it fronts.
func serviceWritable(a *acl.Authorizer, sv model.ServiceSpec) error {
	if err := a.Check(acl.ResourceService, sv.Service, acl.AccessWrite); err != nil {
		return err
	}
	if sv.Kind != "connect-proxy" || sv.Proxy == "" {
		return nil
	}
	var p struct{ DestinationServiceName string }
	if json.Unmarshal([]byte(sv.Proxy), &p) != nil {
		return nil // validated at decode; nothing more to decide on
	}
	return a.Check(acl.ResourceService, p.DestinationServiceName, acl.AccessWrite)
}

// registerChangesNode is Consul's test of whether a register writes the
// node itself, which needs node:write; a register that only re-posts the
// node as it is needs no more than its services do.
func registerChangesNode(reg *model.Register, n model.Node) bool {
	if reg.SkipNodeUpdate {
		return false
	}
	return reg.ID != n.ID || !strings.EqualFold(reg.Node, n.Name) || reg.Address != n.Address ||
		!reflect.DeepEqual(reg.TaggedAddresses, n.TaggedAddresses) || !reflect.DeepEqual(reg.NodeMeta, n.Meta)
}

// vetDeregister decides a deregister over s. node:write allows any;
// otherwise a service needs service:write on it and a check write on its
// service (or its node, for a node check). A service or check that does not
// exist is an error, as Consul's is once it cannot be allowed by the node.
func vetDeregister(a *acl.Authorizer, s *model.State, d *model.Deregister) error {
	nodeErr := a.Check(acl.ResourceNode, d.Node, acl.AccessWrite)
	if nodeErr == nil {
		return nil
	}
	switch {
	case d.ServiceID != "":
		sv, ok := s.Service(model.ServiceKey{Node: d.Node, ServiceID: d.ServiceID})
		if !ok {
			return errorf(http.StatusInternalServerError, "Unknown service ID '%s'", d.ServiceID)
		}
		return a.Check(acl.ResourceService, sv.Service, acl.AccessWrite)
	case d.CheckID != "":
		ch, ok := s.Check(model.CheckKey{Node: d.Node, CheckID: d.CheckID})
		if !ok {
			return errorf(http.StatusInternalServerError, "Unknown check ID '%s'", d.CheckID)
		}
		if ch.ServiceID != "" {
			return a.Check(acl.ResourceService, ch.ServiceName, acl.AccessWrite)
		}
	}
	return nodeErr
}

// vetCatalogWrite resolves the caller over the state now and decides cmd's
// register or deregister; nil allows it.
func (h *handler) vetCatalogWrite(c *call, cmd model.Command) error {
	if !h.opts.ACL.enabled() {
		return nil
	}
	var err error
	h.b.Read(func(s *model.State) {
		var a *acl.Authorizer
		if a, err = h.authz(c, s); err != nil {
			return
		}
		switch {
		case cmd.Register != nil:
			err = vetRegister(a, s, cmd.Register)
		case cmd.Deregister != nil:
			err = vetDeregister(a, s, cmd.Deregister)
		}
	})
	return aclFailure(err)
}

// nodeReadable is node:read on a node.
func nodeReadable(a *acl.Authorizer, node string) bool {
	return a.Allowed(acl.ResourceNode, node, acl.AccessRead)
}

// instanceReadable is node:read on an instance's node and service:read on
// its service, as Consul's filters of service nodes decide.
func instanceReadable(a *acl.Authorizer, node, service string) bool {
	return nodeReadable(a, node) && a.Allowed(acl.ResourceService, service, acl.AccessRead)
}

// checkReadable is node:read on a check's node and, for a service check,
// service:read on its service.
func checkReadable(a *acl.Authorizer, c model.Check) bool {
	return nodeReadable(a, c.Node) && (c.ServiceName == "" || a.Allowed(acl.ResourceService, c.ServiceName, acl.AccessRead))
}

// readableChecks keeps the checks the caller may read and reports whether
// it dropped any.
func readableChecks(a *acl.Authorizer, all []model.Check) ([]model.Check, bool) {
	out := make([]model.Check, 0, len(all))
	for _, c := range all {
		if checkReadable(a, c) {
			out = append(out, c)
		}
	}
	return out, len(out) < len(all)
}
