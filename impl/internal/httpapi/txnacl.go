package httpapi

import (
	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// A txn under ACLs (S90, S91). Every op is decided before anything is
// applied, as Consul's txn endpoint decides them: a KV write needs
// key:write (a delete-tree write on the whole prefix), check-index,
// check-session and check-sequencer key:read; a get is not refused but
// its result is dropped unless the caller reads the key. A node op needs
// node:write, a service op service:write, a check op service:write on its
// service or node:write for a node check. Any denied op refuses the whole
// txn with a 409 listing each denial, and nothing is applied. The results
// of a txn keep only what the caller may read.
//
// tenure decides catalog ops against the stored records as well as the
// names an op gives (S91): Consul decides a service op on the name the op
// carries and a check op on the service name it carries, so a token could
// delete a service by its ID under another service's name.

// vetTxn decides every op of txn over s; it returns the denials, one per
// denied op.
func vetTxn(a *acl.Authorizer, s *model.State, txn model.Txn) []model.TxnError {
	var out []model.TxnError
	for i, op := range txn.Ops {
		if err := vetTxnOp(a, s, op); err != nil {
			out = append(out, model.TxnError{OpIndex: i, What: err.Error()})
		}
	}
	return out
}

func vetTxnOp(a *acl.Authorizer, s *model.State, op model.TxnOp) error {
	switch {
	case op.KV != nil:
		switch op.KV.Verb {
		case model.KVDeleteTree:
			return a.KeyWritePrefix(op.KV.Key)
		case model.KVGet, model.KVGetOrEmpty, model.KVGetTree:
			return nil // filtered on the way out
		case model.KVCheckIndex, model.KVCheckSession, model.KVCheckSequencer:
			return a.Check(acl.ResourceKey, op.KV.Key, acl.AccessRead)
		}
		return a.Check(acl.ResourceKey, op.KV.Key, acl.AccessWrite)
	case op.Node != nil:
		if op.Node.Verb == model.CatalogGet {
			return nil
		}
		return a.Check(acl.ResourceNode, op.Node.Node, acl.AccessWrite)
	case op.Service != nil:
		if op.Service.Verb == model.CatalogGet {
			return nil
		}
		if err := a.Check(acl.ResourceService, op.Service.Service.Service, acl.AccessWrite); err != nil {
			return err
		}
		id := op.Service.Service.ID
		if id == "" {
			id = op.Service.Service.Service
		}
		if old, ok := s.Service(model.ServiceKey{Node: op.Service.Node, ServiceID: id}); ok {
			return a.Check(acl.ResourceService, old.Service, acl.AccessWrite) // S91
		}
		return nil
	case op.Check != nil:
		if op.Check.Verb == model.CatalogGet {
			return nil
		}
		if err := checkOpWritable(a, s, op.Check.Node, op.Check.Check.ServiceID); err != nil {
			return err
		}
		if old, ok := s.Check(model.CheckKey{Node: op.Check.Node, CheckID: op.Check.Check.CheckID}); ok {
			return checkOpWritable(a, s, old.Node, old.ServiceID) // S91
		}
		return nil
	case op.Session != nil:
		// tenure's own op (S69): a delete needs what a destroy needs.
		if se, ok := s.Session(op.Session.ID); ok {
			return a.Check(acl.ResourceSession, se.Node, acl.AccessWrite)
		}
	}
	return nil
}

// checkOpWritable is a check write on node: node:write for a node check,
// service:write on the service serviceID names for a service check. An
// unknown service is left to the model, which refuses it.
func checkOpWritable(a *acl.Authorizer, s *model.State, node, serviceID string) error {
	if serviceID == "" {
		return a.Check(acl.ResourceNode, node, acl.AccessWrite)
	}
	sv, ok := s.Service(model.ServiceKey{Node: node, ServiceID: serviceID})
	if !ok {
		return nil
	}
	return a.Check(acl.ResourceService, sv.Service, acl.AccessWrite)
}

// readableTxnResults keeps the results the caller may read, as Consul
// filters them: a key by key:read, a node by node:read, a service by
// service:read on its name, a service check by service:read on its
// service, a node check by node:read. It reports whether it dropped any.
func readableTxnResults(a *acl.Authorizer, rs []model.TxnResult) ([]model.TxnResult, bool) {
	out := make([]model.TxnResult, 0, len(rs))
	for _, r := range rs {
		ok := true
		switch {
		case r.KV != nil:
			ok = a.Allowed(acl.ResourceKey, r.KV.Key, acl.AccessRead)
		case r.Node != nil:
			ok = nodeReadable(a, r.Node.Name)
		case r.Service != nil:
			ok = a.Allowed(acl.ResourceService, r.Service.Service, acl.AccessRead)
		case r.Check != nil && r.Check.ServiceName != "":
			ok = a.Allowed(acl.ResourceService, r.Check.ServiceName, acl.AccessRead)
		case r.Check != nil:
			ok = nodeReadable(a, r.Check.Node)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, len(out) < len(rs)
}
