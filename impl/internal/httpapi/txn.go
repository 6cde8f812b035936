package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

const txnDocURL = "https://developer.hashicorp.com/docs/agent/config/config-files#txn_max_req_len"

// txnOpJSON is one element of the request body (api.TxnOp), whose first
// set member is the op, as in Consul. Session is tenure's (S69): Consul's
// body has no such member and refuses it as an unknown field.
type txnOpJSON struct {
	KV      *txnKVJSON
	Node    *txnNodeJSON
	Service *txnServiceJSON
	Check   *txnCheckJSON
	Session *txnSessionJSON
}

// txnKVJSON is api.KVTxnOp; Value is base64.
type txnKVJSON struct {
	Verb      model.KVVerb
	Key       string
	Value     []byte
	Flags     uint64
	Index     uint64 // ModifyIndex; the LockIndex for check-sequencer (S43)
	Session   string
	Namespace string // Enterprise; ignored as in Consul CE
	Partition string // Enterprise; ignored as in Consul CE
}

// The members below have every field of consul/api's structs, so a body
// consul/api writes decodes; the fields tenure does not store are read as
// raw JSON and dropped, as Consul drops some of them too.

// txnNodeJSON is api.NodeTxnOp.
type txnNodeJSON struct {
	Verb model.CatalogVerb
	Node struct {
		ID              string
		Node            string
		Address         string
		Datacenter      string
		TaggedAddresses map[string]string
		Meta            map[string]string
		CreateIndex     uint64
		ModifyIndex     uint64 // the index of cas and delete-cas
		Partition       string
		PeerName        string
		Locality        json.RawMessage
	}
}

// txnServiceJSON is api.ServiceTxnOp.
type txnServiceJSON struct {
	Verb    model.CatalogVerb
	Node    string
	Service txnService
}

// txnService is api.AgentService as a txn carries it: the fields a catalog
// register keeps (catalogwire.Service), and those it reads or ignores.
type txnService struct {
	catalogwire.Service
	CreateIndex uint64
	ModifyIndex uint64 // the index of cas and delete-cas
	ContentHash string
	Connect     json.RawMessage
	PeerName    string
	AI          json.RawMessage
	Namespace   string
	Partition   string
	Datacenter  string
}

// txnCheckJSON is api.CheckTxnOp.
type txnCheckJSON struct {
	Verb  model.CatalogVerb
	Check txnCheck
}

// txnCheck is api.HealthCheck as a txn carries it: the fields a catalog
// register keeps (catalogwire.Check), and those it reads or ignores.
type txnCheck struct {
	catalogwire.Check
	ServiceName string
	ServiceTags []string
	Namespace   string
	Partition   string
	ExposedPort int
	PeerName    string
	CreateIndex uint64
	ModifyIndex uint64 // the index of cas and delete-cas
}

// txnSessionJSON is api.SessionTxnOp (S69).
type txnSessionJSON struct {
	Verb    model.SessionVerb
	Session struct {
		ID            string
		Name          string
		Node          string
		LockDelay     json.RawMessage
		Behavior      string
		TTL           string
		Namespace     string
		Checks        []string
		NodeChecks    []string
		ServiceChecks json.RawMessage
		CreateIndex   uint64
		ModifyIndex   uint64
	}
}

// decodeTxn turns a request body into the model's Txn, with Consul's
// texts and limits (S44, S68, CONSUL.md §6). Like Consul it rejects unknown
// fields, reads only the first JSON value, and drops ops that set no
// member.
func decodeTxn(body []byte) (model.Txn, error) {
	var ops []txnOpJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ops); err != nil {
		return model.Txn{}, errorf(http.StatusBadRequest, "Failed to parse body: %v", err)
	}
	if len(ops) > model.MaxTxnOps {
		return model.Txn{}, errorf(http.StatusRequestEntityTooLarge,
			"Transaction contains too many operations (%d > %d)", len(ops), model.MaxTxnOps)
	}
	var txn model.Txn
	for i, op := range ops {
		var (
			out model.TxnOp
			err error
		)
		switch {
		case op.KV != nil:
			out, err = decodeTxnKV(i, op.KV)
		case op.Node != nil:
			out, err = decodeTxnNode(op.Node)
		case op.Service != nil:
			out, err = decodeTxnService(op.Service)
		case op.Check != nil:
			out, err = decodeTxnCheck(op.Check)
		case op.Session != nil:
			if err := checkLen(fmt.Sprintf("Session ID of op %d", i), op.Session.Session.ID, maxNameLen); err != nil {
				return model.Txn{}, err
			}
			out = model.TxnOp{Session: &model.SessionTxnOp{Verb: op.Session.Verb, ID: op.Session.Session.ID}}
		default:
			continue
		}
		if err != nil {
			return model.Txn{}, err
		}
		txn.Ops = append(txn.Ops, out)
	}
	return txn, nil
}

func decodeTxnKV(i int, kv *txnKVJSON) (model.TxnOp, error) {
	if len(kv.Value) > model.MaxValueSize {
		// Consul's text quotes the key; a key over its own limit is not
		// worth quoting.
		if len(kv.Key) > maxKeyLen {
			return model.TxnOp{}, txnOpLimits(i, model.KVOp{Key: kv.Key})
		}
		return model.TxnOp{}, errorf(http.StatusRequestEntityTooLarge,
			"Value for key %q is too large (%d > %d bytes)", kv.Key, len(kv.Value), model.MaxValueSize)
	}
	value := kv.Value
	if len(value) == 0 {
		value = nil
	}
	op := model.KVOp{Verb: kv.Verb, Key: kv.Key, Value: value, Flags: kv.Flags, Index: kv.Index, Session: kv.Session}
	if err := txnOpLimits(i, op); err != nil {
		return model.TxnOp{}, err
	}
	return model.TxnOp{KV: &op}, nil
}

// The catalog ops are held to a catalog register's limits (S39).

func decodeTxnNode(in *txnNodeJSON) (model.TxnOp, error) {
	n := in.Node
	if err := registerLimits(catalogwire.Register{Node: n.Node, ID: n.ID, Address: n.Address,
		TaggedAddresses: n.TaggedAddresses, NodeMeta: n.Meta}); err != nil {
		return model.TxnOp{}, err
	}
	return model.TxnOp{Node: &model.NodeTxnOp{Verb: in.Verb, Node: n.Node, ID: n.ID, Address: n.Address,
		TaggedAddresses: n.TaggedAddresses, Meta: n.Meta, Index: n.ModifyIndex}}, nil
}

func decodeTxnService(in *txnServiceJSON) (model.TxnOp, error) {
	sv := in.Service
	if err := checkLen("Node name", in.Node, maxNameLen); err != nil {
		return model.TxnOp{}, err
	}
	if err := serviceLimits(&sv.Service); err != nil {
		return model.TxnOp{}, err
	}
	details, err := sv.Details()
	if err != nil {
		return model.TxnOp{}, errorf(http.StatusBadRequest, "Invalid service: %v", err)
	}
	return model.TxnOp{Service: &model.ServiceTxnOp{Verb: in.Verb, Node: in.Node, Index: sv.ModifyIndex,
		Service: model.ServiceSpec{ID: sv.ID, Service: sv.Service.Service, Tags: sv.Tags, Address: sv.Address,
			Port: sv.Port, Meta: sv.Meta, ServiceDetails: details}}}, nil
}

func decodeTxnCheck(in *txnCheckJSON) (model.TxnOp, error) {
	c := in.Check
	if err := registerLimits(catalogwire.Register{Node: c.Node, Check: &c.Check}); err != nil {
		return model.TxnOp{}, err
	}
	def, err := decodeDefinition(c.Definition, true, "Failed to parse body")
	if err != nil {
		return model.TxnOp{}, err
	}
	return model.TxnOp{Check: &model.CheckTxnOp{Verb: in.Verb, Node: c.Node, Index: c.ModifyIndex,
		Check: model.CheckSpec{CheckID: c.CheckID, Name: c.Name, Status: c.Status, Notes: c.Notes,
			Output: c.Output, ServiceID: c.ServiceID, Type: c.Type, Definition: def}}}, nil
}

// txn is PUT /v1/txn. A txn with only read verbs is answered from a copy of
// the local or leader state without a log entry; any write goes through
// the leader's log (S44).
func (h *handler) txn(c *call) error {
	body, err := readBody(c, maxTxnBody, func(n int64) error {
		return errorf(http.StatusRequestEntityTooLarge,
			"Request body(%d bytes) too large, max size: %d bytes. See %s.", n, maxTxnBody, txnDocURL)
	})
	if err != nil {
		return err
	}
	txn, err := decodeTxn(body)
	if err != nil {
		return err
	}
	cmd := model.Command{Txn: &txn}
	if cmd.IsReadOnly() {
		return h.txnRead(c, cmd, body)
	}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	a := acl.ManageAll()
	if h.opts.ACL.enabled() {
		var denied []model.TxnError
		h.b.Read(func(s *model.State) {
			if a, err = h.authz(c, s); err == nil {
				denied = vetTxn(a, s, txn) // S90
			}
		})
		if err != nil {
			return err
		}
		if len(denied) > 0 {
			return txnConflict(c, txnAnswer{Errors: denied})
		}
	}
	res, err := h.b.Apply(c.r.Context(), cmd)
	var delay *leader.LockDelayError
	if errors.As(err, &delay) {
		c.w.Header().Set(lockDelayHeader, delay.Remaining.String())
		return txnConflict(c, txnAnswer{Errors: []model.TxnError{{OpIndex: lockOpIndex(txn, delay.Key), What: delay.Error()}}})
	}
	if err != nil {
		return h.applyFailure(err)
	}
	res.TxnResults, _ = readableTxnResults(a, res.TxnResults)
	return h.txnAnswer(c, res)
}

// txnRead serves a read-only txn like a read (consistency modes, no
// blocking). Only LastContact and KnownLeader are set as headers, and the
// body carries Consul's read metadata too, as Consul's does (S44).
func (h *handler) txnRead(c *call, cmd model.Command, body []byte) error {
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	if here, err := h.readHere(c, q, body); err != nil || !here {
		return err
	}
	if q.mode == modeConsistent {
		if err := h.b.VerifyLeader(c.r.Context()); err != nil {
			return h.applyFailure(err)
		}
	}
	var (
		res      model.Result
		out      txnAnswer
		denied   []model.TxnError
		filtered bool
	)
	h.b.Read(func(s *model.State) {
		var a *acl.Authorizer
		if a, err = h.authz(c, s); err != nil {
			return
		}
		if denied = vetTxn(a, s, *cmd.Txn); len(denied) > 0 {
			return // S90
		}
		// A copy, so the read can never disturb the applied state.
		res = s.Clone().Apply(s.Index()+1, cmd)
		res.TxnResults, filtered = readableTxnResults(a, res.TxnResults)
		out.Results = h.txnResults(s, res.TxnResults)
	})
	if err != nil {
		return err
	}
	h.setLeaderMeta(c.w)
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	isLeader, _, known := h.b.Leader()
	meta := &txnReadMeta{Index: 1, LastContact: max(h.b.LastContact(), 0), KnownLeader: isLeader || known,
		ResultsFilteredByACLs: filtered && !h.maskFiltered(c)}
	if len(denied) > 0 {
		// Consul answers a refused read before it fills in the metadata.
		return txnConflict(c, txnAnswer{Errors: denied, txnReadMeta: &txnReadMeta{}})
	}
	if len(res.TxnErrors) > 0 {
		return txnConflict(c, txnAnswer{Errors: res.TxnErrors, txnReadMeta: meta})
	}
	out.txnReadMeta = meta
	return writeJSON(c, http.StatusOK, out)
}

func (h *handler) txnAnswer(c *call, res model.Result) error {
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	if len(res.TxnErrors) > 0 {
		return txnConflict(c, txnAnswer{Errors: res.TxnErrors})
	}
	var out txnAnswer
	h.b.Read(func(s *model.State) { out.Results = h.txnResults(s, res.TxnResults) })
	return writeJSON(c, http.StatusOK, out)
}

// txnResults shows a txn's results in Consul's shapes. s is read for what
// a result shows beside its record (a service check's tags): the state the
// txn left, or a later one.
func (h *handler) txnResults(s *model.State, rs []model.TxnResult) []txnResultJSON {
	out := []txnResultJSON{} // a committed txn with no results answers [], as Consul's
	for _, r := range rs {
		switch {
		case r.KV != nil:
			kv := toKV(*r.KV)
			out = append(out, txnResultJSON{KV: &kv})
		case r.Node != nil:
			out = append(out, txnResultJSON{Node: h.toNode(*r.Node)})
		case r.Service != nil:
			// Tags and Meta show as stored, null when none, as Consul's
			// txn answers do.
			sv := toNodeService(*r.Service)
			sv.Tags, sv.Meta = r.Service.Tags, r.Service.Meta
			out = append(out, txnResultJSON{Service: &sv})
		case r.Check != nil:
			// A node check has no tags (null); a service check shows its
			// service's, as Consul copies them into the check.
			var tags []string
			if r.Check.ServiceID != "" {
				if sv, ok := s.Service(model.ServiceKey{Node: r.Check.Node, ServiceID: r.Check.ServiceID}); ok {
					tags = sv.Tags
				}
			}
			ch := toCheck(*r.Check, tags)
			out = append(out, txnResultJSON{Check: &ch})
		}
	}
	return out
}

// txnConflict answers 409 with the failed ops (S44).
func txnConflict(c *call, a txnAnswer) error {
	buf, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode txn errors: %w", err)
	}
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(http.StatusConflict)
	_, _ = c.w.Write(buf)
	return nil
}

// lockOpIndex finds the lock op a lock-delay refusal names.
func lockOpIndex(txn model.Txn, key string) int {
	for i, op := range txn.Ops {
		if op.KV != nil && op.KV.Verb == model.KVLock && op.KV.Key == key {
			return i
		}
	}
	return 0
}
