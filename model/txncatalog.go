package model

import (
	"encoding/hex"
	"strings"
)

// A transaction's node, service, check and session ops (S68, S69), with
// Consul's verbs and texts. Each writes through the same code as the
// catalog register and deregister and the session destroy, so a node
// delete or a critical check invalidates sessions exactly as those do
// (S10, S11, S12), at the transaction's index and undone with it.

// vetTxnOp is Consul's check of an op before a transaction runs: a known
// verb, and for a write a node name and a well-formed node ID, a service
// name and address. It fills in the defaults Consul fills in then (a
// service's ID from its name, a check's ID from its name), on copies, so op
// must belong to a slice the caller may change. It returns the failure, or
// "".
func vetTxnOp(op *TxnOp) string {
	switch {
	case op.KV != nil:
		return ""
	case op.Node != nil:
		o := op.Node
		switch {
		case !o.Verb.known():
			return "unknown node operation: " + string(o.Verb)
		case o.Verb == CatalogGet:
			return ""
		case o.Node == "":
			return "Must provide node"
		}
		if o.ID != "" {
			if err := checkUUID(o.ID); err != "" {
				return "Bad node ID: " + err
			}
		}
	case op.Service != nil:
		if !op.Service.Verb.known() {
			return "unknown service operation: " + string(op.Service.Verb)
		}
		if op.Service.Verb == CatalogGet {
			return ""
		}
		o := *op.Service
		sv := &o.Service
		switch {
		case sv.ID == "" && sv.Service == "":
			return "service name (Service.Service) is required; both Service ID (Service.ID) and Service Name cannot be empty"
		case sv.ID == "":
			sv.ID = sv.Service
		case sv.Service == "":
			return "Must provide service name (Service.Service) when service ID is provided"
		}
		if isAnyAddress(sv.Address) {
			return "Invalid service address"
		}
		op.Service = &o
	case op.Check != nil:
		if !op.Check.Verb.known() {
			return "unknown check operation: " + string(op.Check.Verb)
		}
		if op.Check.Verb != CatalogGet && op.Check.Check.CheckID == "" {
			o := *op.Check
			o.Check.CheckID = o.Check.Name
			op.Check = &o
		}
	case op.Session != nil:
		if op.Session.Verb != SessionDelete {
			return "unknown session operation: " + string(op.Session.Verb)
		}
	default:
		return "unknown operation type"
	}
	return ""
}

// checkUUID says why id is not a UUID, in the words of the library Consul
// parses node IDs with, or "".
func checkUUID(id string) string {
	if len(id) != 36 {
		return "uuid string is wrong length"
	}
	if id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return "uuid is improperly formatted"
	}
	if _, err := hex.DecodeString(id[0:8] + id[9:13] + id[14:18] + id[19:23] + id[24:36]); err != nil {
		return err.Error()
	}
	return ""
}

// isAnyAddress reports whether addr is the unspecified address, which a
// service may not register under.
func isAnyAddress(addr string) bool {
	switch strings.Trim(addr, "[]") {
	case "0.0.0.0", "::":
		return true
	}
	return false
}

// stale is a cas verb's test: Index 0 asks that the record be absent, any
// other Index that it exist with that ModifyIndex.
func stale(index uint64, exists bool, modify uint64) bool {
	if index == 0 {
		return exists
	}
	return !exists || modify != index
}

func withRecord(r TxnResult) kvOutcome { return kvOutcome{ok: true, record: r} }

// nodeOp runs a node op. A get or set names the node by ID when the op has
// one, else by name (compared ignoring case, S62).
func (a *applier) nodeOp(o NodeTxnOp) kvOutcome {
	s := a.s
	key := s.nodeKey(o.Node)
	find := func() (Node, bool) {
		if o.ID != "" {
			return s.nodeByID(o.ID)
		}
		n, ok := s.nodes[key]
		return n, ok
	}
	n, exists := s.nodes[key]
	switch o.Verb {
	case CatalogGet:
		n, ok := find()
		if !ok {
			return refused("node %q doesn't exist", o.Node)
		}
		return withRecord(TxnResult{Node: &n})
	case CatalogCAS:
		if stale(o.Index, exists, n.ModifyIndex) {
			return refused("failed to set node %q, index is stale", o.Node)
		}
		fallthrough
	case CatalogSet:
		r := Register{Node: key, ID: o.ID, Address: o.Address, TaggedAddresses: o.TaggedAddresses, NodeMeta: o.Meta}
		if err := a.putNode(r, o.Node); err != nil {
			return rejected(err)
		}
		n, _ := find()
		return withRecord(TxnResult{Node: &n})
	case CatalogDeleteCAS:
		if !exists || n.ModifyIndex != o.Index {
			return refused("failed to delete node %q, index is stale", o.Node)
		}
		fallthrough
	case CatalogDelete:
		if exists {
			a.deleteNode(key)
		}
		return accepted()
	}
	return refused("unknown node operation: %s", o.Verb)
}

// serviceOp runs a service op.
func (a *applier) serviceOp(o ServiceTxnOp) kvOutcome {
	s := a.s
	node := s.nodeKey(o.Node)
	key := ServiceKey{Node: node, ServiceID: o.Service.ID}
	sv, exists := s.services[key]
	switch o.Verb {
	case CatalogGet:
		if !exists {
			return refused("service %q on node %q doesn't exist", o.Service.ID, o.Node)
		}
		return withRecord(TxnResult{Service: &sv})
	case CatalogCAS:
		if stale(o.Index, exists, sv.ModifyIndex) {
			return refused("failed to set service %q on node %q, index is stale", o.Service.ID, o.Node)
		}
		fallthrough
	case CatalogSet:
		// Consul checks the meta after the index and before the node (S74).
		if p := ServiceMetaProblem(o.Service.Kind, o.Service.Meta); p != "" {
			return refused("Invalid Service Meta for node %s and serviceID %s: %s", o.Node, o.Service.ID, p)
		}
		if _, ok := s.nodes[node]; !ok {
			return refused("Missing node registration")
		}
		a.putService(node, o.Service)
		sv := s.services[key]
		return withRecord(TxnResult{Service: &sv})
	case CatalogDeleteCAS:
		if !exists || sv.ModifyIndex != o.Index {
			return refused("failed to delete service %q on node %q, index is stale", o.Service.ID, o.Node)
		}
		fallthrough
	case CatalogDelete:
		a.deleteService(key)
		return accepted()
	}
	return refused("unknown service operation: %s", o.Verb)
}

// checkOp runs a check op. tenure refuses a set without an ID or with a
// status other than passing, warning and critical, where Consul would fail
// with a lookup error or store the status as given (S68).
func (a *applier) checkOp(o CheckTxnOp) kvOutcome {
	s := a.s
	node := s.nodeKey(o.Node)
	c := o.Check
	key := CheckKey{Node: node, CheckID: c.CheckID}
	prev, exists := s.checks[key]
	switch o.Verb {
	case CatalogGet:
		if !exists {
			return refused("check %q on node %q doesn't exist", c.CheckID, o.Node)
		}
		return withRecord(TxnResult{Check: &prev})
	case CatalogCAS:
		if stale(o.Index, exists, prev.ModifyIndex) {
			return refused("failed to set check %q on node %q, index is stale", c.CheckID, o.Node)
		}
		fallthrough
	case CatalogSet:
		if c.Status == "" {
			c.Status = HealthCritical
		}
		switch {
		case c.CheckID == "":
			return refused("Must provide check ID")
		case !c.Status.Valid():
			return refused("Invalid check status '%s'", c.Status)
		}
		if _, ok := s.nodes[node]; !ok {
			return refused("Missing node registration")
		}
		if c.ServiceID != "" {
			if _, ok := s.services[ServiceKey{Node: node, ServiceID: c.ServiceID}]; !ok {
				return refused("Missing service registration")
			}
		}
		a.putCheck(node, c)
		stored := s.checks[key]
		return withRecord(TxnResult{Check: &stored})
	case CatalogDeleteCAS:
		if !exists || prev.ModifyIndex != o.Index {
			return refused("failed to delete check %q on node %q, index is stale", c.CheckID, o.Node)
		}
		fallthrough
	case CatalogDelete:
		a.deleteCheck(key)
		return accepted()
	}
	return refused("unknown check operation: %s", o.Verb)
}

// sessionOp invalidates a session as a destroy does (S69). Unlike a destroy,
// it fails when the session does not exist, as Consul's internal session
// delete does: a transaction can end a session it still holds, and write
// only if it did.
func (a *applier) sessionOp(o SessionTxnOp) kvOutcome {
	if _, ok := a.s.sessions[o.ID]; !ok {
		return refused("failed to delete session: session %q doesn't exist", o.ID)
	}
	a.invalidate(o.ID)
	return accepted()
}
