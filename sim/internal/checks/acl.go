package checks

import (
	"fmt"
	"slices"
	"time"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// checkACLEnforced: in a run with ACLs on, nothing is applied that the
// token it was sent with did not allow. The ACL tables the run's header
// describes (the builtin policies, the management token, each client's
// token and policy) are built into a model.State, and each request is
// decided again there by package acl, as a server decides it (S84, S85):
//   - every request answered as applied (200; a txn only without errors,
//     since a refused op fails the whole txn) needs what its kind needs: a
//     session create session:write on its node, a destroy or renew
//     session:write on the session's node when the session existed, a KV
//     read key:read, a KV write key:write (a tree delete on everything its
//     prefix can hold), a prepared query query:write on its name;
//   - every key a read returned needs key:read;
//   - every acquire a server applied (a key taking a new holder, whatever
//     its client was told) needs key:write for the token that created the
//     holding session, which catches an acquire whose answer was lost.
//
// Agent-local requests (the agent check's register and pass) are not
// judged: they are not raft writes. Runs without ACLs judge nothing.
func checkACLEnforced(ix *traceIndex) []Violation {
	if ix.hdr == nil || ix.hdr.ACL == nil {
		return nil
	}
	setup := ix.hdr.ACL
	st, err := aclState(setup)
	if err != nil {
		return []Violation{violation(0, "the run's ACL setup does not build: %v", err)}
	}
	res := acl.NewResolver(acl.Config{Enabled: true, DefaultPolicy: setup.DefaultPolicy, Datacenter: "dc1"})
	authz := map[string]*acl.Authorizer{}
	decide := func(secret string) (*acl.Authorizer, error) {
		if a, ok := authz[secret]; ok {
			return a, nil
		}
		a, err := res.Resolve(st, secret)
		if err != nil {
			return nil, err
		}
		authz[secret] = a
		return a, nil
	}

	sessNode := map[string]string{}        // session → its node, from the states
	sessGone := map[string]time.Duration{} // session → when a server first removed it
	sessToken := map[string]string{}       // session → the secret that created it
	for _, o := range ix.Obs {
		for _, s := range o.Obs.NewSess {
			sessNode[s.ID] = s.Node
		}
		for _, s := range o.Obs.GoneSess {
			if _, ok := sessGone[s.ID]; !ok {
				sessGone[s.ID] = o.At
			}
		}
	}
	for _, op := range ix.ops {
		if op.Call.Req == core.ReqCreate && op.OK() && op.Ret.SessionID != "" {
			sessToken[op.Ret.SessionID] = op.Call.Token
		}
	}

	var out []Violation
	deny := func(at time.Duration, who, what string, err error) {
		out = append(out, violation(at, "%s: %s was applied though its token may not: %v", who, what, err))
	}
	for _, op := range ix.ops {
		if !op.OK() || (op.Call.Req == core.ReqTxn && (op.Ret.Status != 200 || len(op.Ret.TxnErrors) > 0)) {
			continue
		}
		live := sessNode
		if id := op.Call.ID; id != "" {
			if gone, ok := sessGone[id]; ok && gone <= op.CallAt || op.Ret.Status == 404 {
				// A destroy or renew of a session already gone needs
				// nothing (S85): the server answers it from the state.
				live = nil
			}
		}
		needs := callNeeds(op.Call, live)
		for _, e := range op.Ret.Entries {
			needs = append(needs, need{acl.ResourceKey, e.Key, acl.AccessRead, false})
		}
		if len(needs) == 0 {
			continue
		}
		ix.judge(1)
		a, err := decide(op.Call.Token)
		if err != nil {
			deny(op.RetAt, op.Client, describeCall(op.Call), err)
			continue
		}
		for _, n := range needs {
			if err := n.check(a); err != nil {
				deny(op.RetAt, op.Client, describeCall(op.Call), err)
				break
			}
		}
	}

	// Acquires as the servers applied them, once per entry and key.
	seen := map[string]bool{}
	for _, o := range ix.Obs {
		if o.Obs.Restored {
			continue
		}
		for _, kc := range o.Obs.Keys {
			if kc.After == nil || kc.After.Session == "" || (kc.Before != nil && kc.Before.Session == kc.After.Session) {
				continue
			}
			id := fmt.Sprintf("%d/%s", o.Obs.Index, kc.Key)
			secret, known := sessToken[kc.After.Session]
			if seen[id] || !known {
				continue
			}
			seen[id] = true
			ix.judge(1)
			a, err := decide(secret)
			if err == nil {
				err = a.Check(acl.ResourceKey, kc.Key, acl.AccessWrite)
			}
			if err != nil {
				deny(o.At, o.Server, fmt.Sprintf("the acquire of %q by session %s at index %d", kc.Key, kc.After.Session, o.Obs.Index), err)
			}
		}
	}
	return out
}

// need is one permission a request needs.
type need struct {
	res    acl.Resource
	name   string
	access acl.Access
	prefix bool // key:write on everything under name (a tree delete)
}

func (n need) check(a *acl.Authorizer) error {
	if n.prefix {
		return a.KeyWritePrefix(n.name)
	}
	return a.Check(n.res, n.name, n.access)
}

// callNeeds lists what c needs of its token when it is applied; sessNode
// gives an existing session's node.
func callNeeds(c *core.Call, sessNode map[string]string) []need {
	switch c.Req {
	case core.ReqCreate:
		if c.Create != nil {
			return []need{{acl.ResourceSession, c.Create.Node, acl.AccessWrite, false}}
		}
	case core.ReqDestroy, core.ReqRenew:
		if node, ok := sessNode[c.ID]; ok {
			return []need{{acl.ResourceSession, node, acl.AccessWrite, false}}
		}
	case core.ReqGet:
		return []need{{acl.ResourceKey, c.Key, acl.AccessRead, false}}
	case core.ReqKV:
		if c.KV != nil {
			return []need{kvNeed(*c.KV)}
		}
	case core.ReqTxn:
		var out []need
		for _, op := range c.Txn {
			out = append(out, kvNeed(op))
		}
		return out
	case core.ReqQuery:
		if c.Query != nil {
			return []need{{acl.ResourceQuery, c.Query.Name, acl.AccessWrite, false}}
		}
	}
	return nil
}

// kvNeed is what one KV operation needs.
func kvNeed(op model.KVOp) need {
	switch {
	case op.Verb == model.KVDeleteTree:
		return need{acl.ResourceKey, op.Key, acl.AccessWrite, true}
	case op.Verb.IsWrite():
		return need{acl.ResourceKey, op.Key, acl.AccessWrite, false}
	}
	return need{acl.ResourceKey, op.Key, acl.AccessRead, false}
}

func describeCall(c *core.Call) string {
	switch {
	case c.KV != nil:
		return fmt.Sprintf("op %d (%s %s %q)", c.Op, c.Req, c.KV.Verb, c.KV.Key)
	case c.Create != nil:
		return fmt.Sprintf("op %d (session create on %q)", c.Op, c.Create.Node)
	case c.Key != "":
		return fmt.Sprintf("op %d (%s %q)", c.Op, c.Req, c.Key)
	}
	return fmt.Sprintf("op %d (%s %s)", c.Op, c.Req, c.ID)
}

// aclState builds the ACL tables setup describes, as the servers hold
// them after the run's setup: the builtin policies, the management token,
// and each client's policy and token.
func aclState(setup *core.ACLSetup) (*model.State, error) {
	st := model.New()
	var index uint64
	apply := func(op model.ACLOp) error {
		index++
		if r := st.Apply(index, model.Command{ACL: &op}); r.Err != nil {
			return r.Err
		}
		return nil
	}
	for _, p := range acl.BuiltinPolicies() {
		if err := apply(model.ACLOp{Verb: model.ACLPolicySet, Create: true, Policy: &p}); err != nil {
			return nil, fmt.Errorf("builtin policy %s: %w", p.Name, err)
		}
	}
	mgmt := model.ACLToken{AccessorID: "management", SecretID: setup.Management, Policies: []string{model.GlobalManagementPolicyID}}
	if err := apply(model.ACLOp{Verb: model.ACLTokenSet, Create: true, Token: &mgmt}); err != nil {
		return nil, fmt.Errorf("management token: %w", err)
	}
	names := make([]string, 0, len(setup.Tokens))
	for n := range setup.Tokens {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		t := setup.Tokens[n]
		p := model.ACLPolicy{ID: fmt.Sprintf("policy-%d", i), Name: fmt.Sprintf("sim-client-%d", i), Rules: t.Rules}
		if err := apply(model.ACLOp{Verb: model.ACLPolicySet, Create: true, Policy: &p}); err != nil {
			return nil, fmt.Errorf("policy of %s: %w", n, err)
		}
		tok := model.ACLToken{AccessorID: t.AccessorID, SecretID: t.SecretID, Policies: []string{p.ID}}
		if err := apply(model.ACLOp{Verb: model.ACLTokenSet, Create: true, Token: &tok}); err != nil {
			return nil, fmt.Errorf("token of %s: %w", n, err)
		}
	}
	return st, nil
}
