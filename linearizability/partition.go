package linearizability

import (
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/tenurekv/tenure/model"
)

// scope is what one partition checks: one key, no key (sessions), or all.
type scope struct {
	name  string
	all   bool
	keyed bool
	key   string
}

func (sc *scope) has(key string) bool { return sc.all || (sc.keyed && key == sc.key) }

// stepIn is a porcupine operation's input: the operation and the partition
// it is being checked in.
type stepIn struct {
	r  *rec
	sc *scope
}

// sessionsPartition checks session reads against the shared operations.
const sessionsPartition = "sessions"

// partition splits the history per key (see DESIGN.md). Every partition
// replays the shared operations (session lifecycle, catalog, events, and
// txns with a catalog or session op), since they decide session existence
// and release or delete keys; a key's partition adds the operations that
// read or write that key, a txn or prefix operation going to each key it
// covers. A shared txn's KV ops count only in the partitions of their keys
// (projectTxn).
func (c *checker) partition(ops []porcupine.Operation) [][]porcupine.Operation {
	parts, _ := c.split(ops)
	return parts
}

// split is partition with the partitions' names.
func (c *checker) split(ops []porcupine.Operation) ([][]porcupine.Operation, []*scope) {
	wrap := func(op porcupine.Operation, sc *scope) porcupine.Operation {
		op.Input = stepIn{r: op.Input.(*rec), sc: sc}
		return op
	}
	if c.whole {
		sc := &scope{name: "whole history", all: true}
		part := make([]porcupine.Operation, len(ops))
		for i, op := range ops {
			part[i] = wrap(op, sc)
		}
		return [][]porcupine.Operation{part}, []*scope{sc}
	}
	keys := universe(ops)
	index := make(map[string]int, len(keys))
	scopes := make([]*scope, len(keys))
	parts := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		index[k] = i
		scopes[i] = &scope{name: "key " + k, keyed: true, key: k}
	}
	sess := &scope{name: sessionsPartition}
	var shared, sessionReads []porcupine.Operation
	for _, op := range ops {
		r := op.Input.(*rec)
		switch {
		case r.kind == kindShared, r.kind == kindTxn && catalogTxn(r.cmds[0].Txn):
			shared = append(shared, op)
		case r.kind == kindRead && (r.read.Kind == ReadSession || r.read.Kind == RenewSess):
			sessionReads = append(sessionReads, op)
		default:
			for _, k := range keysOf(r, keys) {
				i := index[k]
				parts[i] = append(parts[i], wrap(op, scopes[i]))
			}
		}
	}
	var outParts [][]porcupine.Operation
	var outScopes []*scope
	for i, p := range parts {
		if len(p) == 0 {
			continue
		}
		for _, op := range shared {
			p = append(p, wrap(op, scopes[i]))
		}
		outParts = append(outParts, p)
		outScopes = append(outScopes, scopes[i])
	}
	if len(sessionReads) > 0 || (len(outParts) == 0 && len(shared) > 0) {
		var p []porcupine.Operation
		for _, op := range slices.Concat(shared, sessionReads) {
			p = append(p, wrap(op, sess))
		}
		outParts = append(outParts, p)
		outScopes = append(outScopes, sess)
	}
	return outParts, outScopes
}

// universe is every key the history names: the keys of point operations and
// every key an answer mentions. A prefix operation covers the universe's
// keys under its prefix; a key no operation names or returns is never
// observed, so it needs no partition.
func universe(ops []porcupine.Operation) []string {
	set := map[string]bool{}
	for _, op := range ops {
		r := op.Input.(*rec)
		for _, e := range r.out.Entries {
			set[e.Key] = true
		}
		switch r.kind {
		case kindKV:
			if o := r.cmds[0].KV; !isTreeVerb(o.Verb) {
				set[o.Key] = true
			}
		case kindTxn:
			kvs, _ := r.cmds[0].Txn.KVOps()
			for _, o := range kvs {
				if !isTreeVerb(o.Verb) {
					set[o.Key] = true
				}
			}
		case kindRead:
			if r.read.Kind == ReadKey {
				set[r.read.Key] = true
			}
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// keysOf lists the universe keys (sorted) a non-shared operation reads or
// writes, each once.
func keysOf(r *rec, keys []string) []string {
	var ops []model.KVOp
	switch r.kind {
	case kindKV:
		ops = []model.KVOp{*r.cmds[0].KV}
	case kindTxn:
		ops, _ = r.cmds[0].Txn.KVOps()
	case kindRead:
		if r.read.Kind == ReadKey {
			return []string{r.read.Key}
		}
		ops = []model.KVOp{{Verb: model.KVGetTree, Key: r.read.Key}}
	}
	var out []string
	for _, o := range ops {
		if !isTreeVerb(o.Verb) {
			out = append(out, o.Key)
			continue
		}
		i, _ := slices.BinarySearch(keys, o.Key)
		for ; i < len(keys) && strings.HasPrefix(keys[i], o.Key); i++ {
			out = append(out, keys[i])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
