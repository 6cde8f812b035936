package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Command is one state-machine input. Exactly one field is set; the struct is
// a tagged union so that it encodes naturally in JSON and msgpack.
type Command struct {
	Register       *Register        `json:",omitempty"`
	Deregister     *Deregister      `json:",omitempty"`
	CreateSession  *CreateSession   `json:",omitempty"`
	DestroySession *DestroySession  `json:",omitempty"`
	KV             *KVOp            `json:",omitempty"`
	Txn            *Txn             `json:",omitempty"`
	Reap           *Reap            `json:",omitempty"`
	Query          *QueryOp         `json:",omitempty"`
	ACL            *ACLOp           `json:",omitempty"`
	Coordinates    *CoordinateBatch `json:",omitempty"`
}

// Reap forgets the deleted keys whose deletion index is at most Index: their
// tombstones, lock-issue watermarks and lock-delay marks (S52). The leader
// proposes it once deletions are older than the reap window, as Consul reaps
// KV tombstones. It changes no table index: no reader sees a change.
type Reap struct {
	Index uint64
}

// Register upserts a node and, atomically with it, any of its services and
// checks (like Consul's catalog register). A check moving to critical
// invalidates the sessions bound to it (S12, S48). All or nothing: one bad
// service or check refuses the whole register (S55).
//
// The node's ID, Address, TaggedAddresses and NodeMeta replace what the
// catalog had, absent ones included, and an ID that another node carries
// renames that node (S62). SkipNodeUpdate leaves an existing node as it is,
// for writers that only mean to set checks. KeepRecord writes an existing
// node's Address, and its ID when one is given, but keeps the tagged
// addresses, meta and (when none is given) ID it has when the register
// applies: for a writer that decides on an older state (the leader's gossip
// reconcile), so that a record written meanwhile is not put back to what it
// read (S62, S63). A node that does not exist takes the register's fields.
type Register struct {
	Node            string
	ID              string `json:",omitempty"`
	Address         string
	TaggedAddresses map[string]string // not omitempty: empty and nil differ (S62)
	NodeMeta        map[string]string
	SkipNodeUpdate  bool          `json:",omitempty"`
	KeepRecord      bool          `json:",omitempty"`
	Services        []ServiceSpec `json:",omitempty"`
	Checks          []CheckSpec   `json:",omitempty"`
}

// ServiceSpec is a service as registered. An empty ID defaults to the
// name, as in Consul.
type ServiceSpec struct {
	ID      string
	Service string
	Tags    []string          `json:",omitempty"`
	Address string            `json:",omitempty"`
	Port    int               `json:",omitempty"`
	Meta    map[string]string `json:",omitempty"`
	// ServiceDetails are stored as given (S74); an entry written before
	// they existed decodes them as zero, a typical service.
	ServiceDetails
}

// CheckSpec is a check as registered. A ServiceID names a service on the
// same node, already registered or in the same register (S55).
type CheckSpec struct {
	CheckID   string
	Name      string
	Status    Health
	Notes     string `json:",omitempty"`
	Output    string `json:",omitempty"`
	ServiceID string `json:",omitempty"`
	Type      string `json:",omitempty"`
	// Definition is stored as given (Check.Definition).
	Definition string `json:",omitempty"`
}

// Deregister removes one service of a node with its checks (ServiceID set),
// one check (CheckID set), or else the whole node (S10, S11, S55). As in
// Consul's state machine, ServiceID wins when both are set.
type Deregister struct {
	Node      string
	ServiceID string `json:",omitempty"`
	CheckID   string `json:",omitempty"`
}

// CreateSession creates a session. ID is chosen by the leader before raft, so
// that every replica applies the same ID (S1). The session is bound to the
// union of the three check lists (S56); the HTTP layer applies
// FixupSessionChecks before it builds the command.
type CreateSession struct {
	ID            string
	Name          string
	Node          string
	Checks        []string
	NodeChecks    []string       `json:",omitempty"`
	ServiceChecks []ServiceCheck `json:",omitempty"`
	LockDelay     time.Duration
	Behavior      Behavior
	TTL           string
}

// QueryVerb names a prepared-query write.
type QueryVerb string

// Prepared-query writes (S57).
const (
	QueryCreate QueryVerb = "create"
	QueryUpdate QueryVerb = "update"
	QueryDelete QueryVerb = "delete"
)

// QueryOp creates, replaces or deletes a prepared query, like Consul's
// PreparedQuery.Apply. For a create the leader chooses Query.ID before raft,
// as for sessions (S1); an update replaces the whole definition; a delete
// reads only Query.ID. Indexes in Query are ignored.
type QueryOp struct {
	Op    QueryVerb
	Query PreparedQuery
}

// DestroySession invalidates a session (S13); TTL expiry uses it too (S14).
type DestroySession struct {
	ID string
}

// KVVerb names a KV operation. The names are Consul's txn verbs; a plain KV
// request maps onto the write verbs (set, cas, lock, unlock, delete,
// delete-cas, delete-tree).
type KVVerb string

// KV verbs (S26-S44). check-sequencer is a tenure extension (S43).
const (
	KVSet            KVVerb = "set"
	KVCAS            KVVerb = "cas"
	KVLock           KVVerb = "lock"
	KVUnlock         KVVerb = "unlock"
	KVGet            KVVerb = "get"
	KVGetOrEmpty     KVVerb = "get-or-empty"
	KVGetTree        KVVerb = "get-tree"
	KVCheckIndex     KVVerb = "check-index"
	KVCheckSession   KVVerb = "check-session"
	KVCheckNotExists KVVerb = "check-not-exists"
	KVCheckSequencer KVVerb = "check-sequencer"
	KVDelete         KVVerb = "delete"
	KVDeleteTree     KVVerb = "delete-tree"
	KVDeleteCAS      KVVerb = "delete-cas"
)

// writeVerbs may stand alone as a KV command; all verbs may appear in a Txn.
var writeVerbs = map[KVVerb]bool{
	KVSet: true, KVCAS: true, KVLock: true, KVUnlock: true,
	KVDelete: true, KVDeleteTree: true, KVDeleteCAS: true,
}

var readVerbs = map[KVVerb]bool{
	KVGet: true, KVGetOrEmpty: true, KVGetTree: true, KVCheckIndex: true,
	KVCheckSession: true, KVCheckNotExists: true, KVCheckSequencer: true,
}

// IsWrite reports whether the verb can change the store.
func (v KVVerb) IsWrite() bool { return writeVerbs[v] }

// KVOp is one KV operation. Index is the cas/check-index ModifyIndex, or the
// LockIndex for check-sequencer.
type KVOp struct {
	Verb    KVVerb
	Key     string
	Value   []byte `json:",omitempty"`
	Flags   uint64 `json:",omitempty"`
	Index   uint64 `json:",omitempty"`
	Session string `json:",omitempty"`
	// LockDelaySeen, on a lock, is the state index at which the leader found
	// the key free of lock-delay. An invalidation applied after it may have
	// armed a delay the check could not see, so the lock is then refused
	// (S22). 0 means no check was made (tests, tools).
	LockDelaySeen uint64 `json:",omitempty"`
}

// Txn is an all-or-nothing list of operations (S44): KV ops, and the
// catalog and session ops of Consul's txn endpoint (S68, S69).
type Txn struct {
	Ops []TxnOp
}

// TxnOp is one operation of a Txn; exactly one field is set.
type TxnOp struct {
	KV      *KVOp         `json:",omitempty"`
	Node    *NodeTxnOp    `json:",omitempty"`
	Service *ServiceTxnOp `json:",omitempty"`
	Check   *CheckTxnOp   `json:",omitempty"`
	Session *SessionTxnOp `json:",omitempty"`
}

// KVTxn is a Txn of KV operations only.
func KVTxn(ops ...KVOp) *Txn {
	kvs := slices.Clone(ops) // one allocation for every op's copy
	t := &Txn{Ops: make([]TxnOp, len(kvs))}
	for i := range kvs {
		t.Ops[i].KV = &kvs[i]
	}
	return t
}

// KVOps lists the txn's KV operations in order, and whether they are all
// it has.
func (t Txn) KVOps() (ops []KVOp, only bool) {
	only = true
	for _, op := range t.Ops {
		if op.KV == nil {
			only = false
			continue
		}
		ops = append(ops, *op.KV)
	}
	return ops, only
}

// CatalogVerb names a txn operation on a node, service or check; the names
// are Consul's (S68).
type CatalogVerb string

// Catalog verbs. get reads; the others write, cas and delete-cas only if
// the record's ModifyIndex is the op's Index.
const (
	CatalogGet       CatalogVerb = "get"
	CatalogSet       CatalogVerb = "set"
	CatalogCAS       CatalogVerb = "cas"
	CatalogDelete    CatalogVerb = "delete"
	CatalogDeleteCAS CatalogVerb = "delete-cas"
)

func (v CatalogVerb) known() bool {
	switch v {
	case CatalogGet, CatalogSet, CatalogCAS, CatalogDelete, CatalogDeleteCAS:
		return true
	}
	return false
}

// NodeTxnOp reads or writes one node. A set writes the node as a catalog
// register without services or checks does (S62); a get finds the node by
// ID when one is given, else by name. Index is the ModifyIndex of cas and
// delete-cas.
type NodeTxnOp struct {
	Verb            CatalogVerb
	Node            string
	ID              string `json:",omitempty"`
	Address         string `json:",omitempty"`
	TaggedAddresses map[string]string
	Meta            map[string]string
	Index           uint64 `json:",omitempty"`
}

// ServiceTxnOp reads or writes one service of a node, which must exist
// for a write (S55). Index is the ModifyIndex of cas and delete-cas.
type ServiceTxnOp struct {
	Verb    CatalogVerb
	Node    string
	Service ServiceSpec
	Index   uint64 `json:",omitempty"`
}

// CheckTxnOp reads or writes one check of a node. A set writes it as a
// catalog register does, invalidating the sessions bound to it when it is
// critical (S12); an empty Status means critical, as in Consul. Index is
// the ModifyIndex of cas and delete-cas.
type CheckTxnOp struct {
	Verb  CatalogVerb
	Node  string
	Check CheckSpec
	Index uint64 `json:",omitempty"`
}

// SessionVerb names a txn operation on a session.
type SessionVerb string

// SessionDelete invalidates a session, as a destroy does (S69).
const SessionDelete SessionVerb = "delete"

// SessionTxnOp invalidates the session ID (tenure's extension, S69).
type SessionTxnOp struct {
	Verb SessionVerb
	ID   string
}

// Kind names the command's variant; it fails unless exactly one is set.
func (c Command) Kind() (string, error) {
	kinds := []struct {
		set  bool
		name string
	}{
		{c.Register != nil, "register"},
		{c.Deregister != nil, "deregister"},
		{c.CreateSession != nil, "create-session"},
		{c.DestroySession != nil, "destroy-session"},
		{c.KV != nil, "kv"},
		{c.Txn != nil, "txn"},
		{c.Reap != nil, "reap"},
		{c.Query != nil, "query"},
		{c.ACL != nil, "acl"},
		{c.Coordinates != nil, "coordinates"},
	}
	name := ""
	for _, k := range kinds {
		if !k.set {
			continue
		}
		if name != "" {
			return "", fmt.Errorf("command sets both %s and %s", name, k.name)
		}
		name = k.name
	}
	if name == "" {
		return "", fmt.Errorf("empty command")
	}
	return name, nil
}

// LockKeys lists the keys this command would acquire. The leader checks their
// lock-delay before it proposes the command (S22, S24).
func (c Command) LockKeys() []string {
	var keys []string
	if c.KV != nil && c.KV.Verb == KVLock {
		keys = append(keys, c.KV.Key)
	}
	if c.Txn != nil {
		for _, op := range c.Txn.Ops {
			if op.KV != nil && op.KV.Verb == KVLock {
				keys = append(keys, op.KV.Key)
			}
		}
	}
	return keys
}

// IsReadOnly reports whether the command cannot change the state, which lets a
// server answer a read-only txn without a raft write.
func (c Command) IsReadOnly() bool {
	if c.Txn == nil {
		return false
	}
	for _, op := range c.Txn.Ops {
		if op.isWrite() {
			return false
		}
	}
	return true
}

// isWrite is Consul's count of a txn's writes: a KV write verb, any node,
// service or check verb but get (an unknown one included), and any session
// op.
func (op TxnOp) isWrite() bool {
	switch {
	case op.KV != nil:
		return op.KV.Verb.IsWrite()
	case op.Node != nil:
		return op.Node.Verb != CatalogGet
	case op.Service != nil:
		return op.Service.Verb != CatalogGet
	case op.Check != nil:
		return op.Check.Verb != CatalogGet
	}
	return true
}

// UnmarshalJSON also reads an op written before transactions had catalog
// ops, a bare KV op ({"Verb":…,"Key":…}), as recorded histories hold them.
func (op *TxnOp) UnmarshalJSON(b []byte) error {
	var probe struct{ Verb *json.RawMessage }
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("txn op: %w", err)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	}
	if probe.Verb != nil {
		var kv KVOp
		if err := strict(&kv); err != nil {
			return fmt.Errorf("txn KV op: %w", err)
		}
		*op = TxnOp{KV: &kv}
		return nil
	}
	type plain TxnOp // without this method
	var p plain
	if err := strict(&p); err != nil {
		return fmt.Errorf("txn op: %w", err)
	}
	*op = TxnOp(p)
	return nil
}
