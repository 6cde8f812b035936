package httpapi

import (
	"strings"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/model"
)

// The KV endpoints under ACLs (S85): a key read needs key:read, a write
// key:write, a recursive delete write on everything under its prefix; a
// listing keeps the keys the caller may read and says it dropped others.

// kvListAuthz resolves the caller of a listing under prefix; with
// enable_key_list_policy the listing itself needs key:list on the prefix.
func (h *handler) kvListAuthz(c *call, s *model.State, prefix string) (*acl.Authorizer, error) {
	a, err := h.authz(c, s)
	if err != nil {
		return nil, err
	}
	if h.opts.ACL.KeyListPolicy {
		if err := aclFailure(a.Check(acl.ResourceKey, prefix, acl.AccessList)); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// readable is a listing's entries the caller may read, and how many there
// were.
type readable struct {
	kept  []model.KVEntry
	total int
}

func readableEntries(a *acl.Authorizer, entries []model.KVEntry) readable {
	out := readable{total: len(entries)}
	for _, e := range entries {
		if a.Allowed(acl.ResourceKey, e.Key, acl.AccessRead) {
			out.kept = append(out.kept, e)
		}
	}
	return out
}

// readableKeys is ?keys over the entries the caller may read: each whole
// key is decided before a separator folds it, as in Consul, so a folded
// "dir/" stands for keys the caller reads. It reports whether any key was
// dropped.
func readableKeys(s *model.State, a *acl.Authorizer, prefix, sep string) ([]string, bool) {
	r := readableEntries(a, s.List(prefix))
	if len(r.kept) == r.total {
		return s.Keys(prefix, sep), false
	}
	var out []string
	for _, e := range r.kept {
		k := e.Key
		if sep != "" {
			if i := strings.Index(k[len(prefix):], sep); i >= 0 {
				k = k[:len(prefix)+i+len(sep)]
			}
		}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out, true
}

// kvDeleteAllowed decides a delete: key:write on the key, or, recursive,
// write on every key the prefix may hold.
func (h *handler) kvDeleteAllowed(c *call, op model.KVOp) error {
	a, err := h.authzNow(c)
	if err != nil {
		return err
	}
	if op.Verb == model.KVDeleteTree {
		return aclFailure(a.KeyWritePrefix(op.Key))
	}
	return aclFailure(a.Check(acl.ResourceKey, op.Key, acl.AccessWrite))
}
