package leader

import (
	"context"
	"fmt"
	"strings"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// reservedACLPrefix is the prefix of the IDs Consul keeps for its builtin
// records: a generated ID never has it.
const reservedACLPrefix = "00000000-0000-0000-0000-0000000000"

// withACLIDs gives a new token, policy or role the IDs the caller left
// empty, each unused by any record of its kind (a token's accessor and
// secret by any token's accessor or secret), and a new token its
// CreateTime on this leader's clock, so every replica applies the same
// values (S87). The caller's command is not modified.
func (l *Core) withACLIDs(cmd model.Command) model.Command {
	op := cmd.ACL
	if op == nil || !(op.Create || op.Verb == model.ACLBootstrap) {
		return cmd
	}
	out := *op
	l.idMu.Lock()
	defer l.idMu.Unlock()
	switch {
	case out.Token != nil && (out.Verb == model.ACLTokenSet || out.Verb == model.ACLBootstrap):
		t := *out.Token
		used := func(id string) (taken bool) {
			l.read(func(st *model.State) {
				_, a := st.ACLToken(id)
				_, s := st.ACLTokenBySecret(id)
				taken = a || s || id == t.AccessorID || id == t.SecretID
			})
			return taken
		}
		if t.AccessorID == "" {
			t.AccessorID = l.freshACLID(used)
		}
		if t.SecretID == "" {
			t.SecretID = l.freshACLID(used)
		}
		if t.CreateTime == 0 {
			t.CreateTime = l.clock.Now().UnixNano()
		}
		out.Token = &t
	case out.Policy != nil && out.Verb == model.ACLPolicySet && out.Policy.ID == "":
		p := *out.Policy
		p.ID = l.freshACLID(func(id string) (taken bool) {
			l.read(func(st *model.State) { _, taken = st.ACLPolicy(id) })
			return taken
		})
		out.Policy = &p
	case out.Role != nil && out.Verb == model.ACLRoleSet && out.Role.ID == "":
		r := *out.Role
		r.ID = l.freshACLID(func(id string) (taken bool) {
			l.read(func(st *model.State) { _, taken = st.ACLRole(id) })
			return taken
		})
		out.Role = &r
	}
	cmd.ACL = &out
	return cmd
}

// freshACLID draws IDs until one is neither used nor reserved. The caller
// holds idMu.
func (l *Core) freshACLID(used func(string) bool) string {
	for {
		id := l.newID()
		if !strings.HasPrefix(id, reservedACLPrefix) && !used(id) {
			return id
		}
	}
}

// InitACL writes what Consul's leader writes when ACLs are enabled (S87):
// each builtin policy, unless it is there with its rules; then the token
// of initialManagement (if set and not yet there), through a bootstrap
// while one is allowed, so that the bootstrap is spent, else as a plain
// token; then the anonymous token. Each write goes through Apply like any
// other. A write the state refuses is reported in refused and the rest go
// on; a failure to apply stops it with err, and the next attempt skips
// what is done.
func (l *Core) InitACL(ctx context.Context, initialManagement string) (refused []error, err error) {
	for _, p := range acl.BuiltinPolicies() {
		var (
			have   model.ACLPolicy
			exists bool
		)
		l.read(func(st *model.State) { have, exists = st.ACLPolicy(p.ID) })
		if exists && have.Rules == p.Rules {
			continue
		}
		if exists {
			// Restore the rules only; an operator's rename stays.
			p.Name, p.Description = have.Name, have.Description
		}
		if rej, err := l.initWrite(ctx, &model.ACLOp{Verb: model.ACLPolicySet, Create: !exists, Policy: &p}); err != nil {
			return refused, fmt.Errorf("create the %s policy: %w", p.Name, err)
		} else if rej != nil {
			refused = append(refused, fmt.Errorf("the %s policy: %w", p.Name, rej))
		}
	}
	if initialManagement != "" {
		var exists, canBootstrap bool
		l.read(func(st *model.State) {
			_, exists = st.ACLTokenBySecret(initialManagement)
			canBootstrap = st.ACLBootstrapIndex() == 0
		})
		if !exists {
			tok := &model.ACLToken{SecretID: initialManagement, Description: acl.InitialManagementDescription,
				Policies: []string{model.GlobalManagementPolicyID}}
			op := &model.ACLOp{Verb: model.ACLTokenSet, Create: true, Token: tok}
			if canBootstrap {
				op.Verb = model.ACLBootstrap
			}
			if rej, err := l.initWrite(ctx, op); err != nil {
				return refused, fmt.Errorf("create the initial management token: %w", err)
			} else if rej != nil {
				refused = append(refused, fmt.Errorf("the initial management token: %w", rej))
			}
		}
	}
	var anonymous bool
	l.read(func(st *model.State) { _, anonymous = st.ACLToken(model.AnonymousTokenID) })
	if !anonymous {
		tok := &model.ACLToken{AccessorID: model.AnonymousTokenID, SecretID: acl.AnonymousSecret, Description: acl.AnonymousDescription}
		if rej, err := l.initWrite(ctx, &model.ACLOp{Verb: model.ACLTokenSet, Create: true, Token: tok}); err != nil {
			return refused, fmt.Errorf("create the anonymous token: %w", err)
		} else if rej != nil {
			refused = append(refused, fmt.Errorf("the anonymous token: %w", rej))
		}
	}
	return refused, nil
}

// initWrite applies one write: the state's refusal, or the failure to
// apply it.
func (l *Core) initWrite(ctx context.Context, op *model.ACLOp) (refused, err error) {
	res, err := l.Apply(ctx, model.Command{ACL: op})
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return res.Err, nil
	}
	return nil, nil
}
