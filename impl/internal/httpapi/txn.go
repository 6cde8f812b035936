package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

const txnDocURL = "https://developer.hashicorp.com/docs/agent/config/config-files#txn_max_req_len"

// txnOpJSON is one element of the request body (api.TxnOp). Node, Service
// and Check ops decode so that a Consul client gets a clear refusal instead
// of a parse error; tenure models KV ops only.
type txnOpJSON struct {
	KV      *txnKVJSON
	Node    any
	Service any
	Check   any
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

// decodeTxn turns a request body into the model's Txn, with Consul's
// texts and limits (S44, CONSUL.md §6). Like Consul it rejects unknown fields,
// reads only the first JSON value, and drops ops that set no member.
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
		switch {
		case op.KV != nil:
			kv := op.KV
			if len(kv.Value) > model.MaxValueSize {
				// Consul's text quotes the key; a key over its own limit is
				// not worth quoting.
				if len(kv.Key) > maxKeyLen {
					return model.Txn{}, txnOpLimits(i, model.KVOp{Key: kv.Key})
				}
				return model.Txn{}, errorf(http.StatusRequestEntityTooLarge,
					"Value for key %q is too large (%d > %d bytes)", kv.Key, len(kv.Value), model.MaxValueSize)
			}
			value := kv.Value
			if len(value) == 0 {
				value = nil
			}
			kvOp := model.KVOp{Verb: kv.Verb, Key: kv.Key, Value: value,
				Flags: kv.Flags, Index: kv.Index, Session: kv.Session}
			if err := txnOpLimits(i, kvOp); err != nil {
				return model.Txn{}, err
			}
			txn.Ops = append(txn.Ops, kvOp)
		case op.Node != nil || op.Service != nil || op.Check != nil:
			return model.Txn{}, errorf(http.StatusBadRequest,
				"Failed to parse body: op %d: only KV operations are supported", i)
		}
	}
	return txn, nil
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
	res, err := h.b.Apply(c.r.Context(), cmd)
	var delay *leader.LockDelayError
	if errors.As(err, &delay) {
		c.w.Header().Set(lockDelayHeader, delay.Remaining.String())
		return txnConflict(c, []model.TxnError{{OpIndex: lockOpIndex(txn, delay.Key), What: delay.Error()}})
	}
	if err != nil {
		return h.applyFailure(err)
	}
	return h.txnAnswer(c, res)
}

// txnRead serves a read-only txn like a read (consistency modes, no
// blocking). Only LastContact and KnownLeader are set, as in Consul.
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
	var res model.Result
	h.b.Read(func(s *model.State) {
		// A copy, so the read can never disturb the applied state.
		res = s.Clone().Apply(s.Index()+1, cmd)
	})
	h.setLeaderMeta(c.w)
	return h.txnAnswer(c, res)
}

func (h *handler) txnAnswer(c *call, res model.Result) error {
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	if len(res.TxnErrors) > 0 {
		return txnConflict(c, res.TxnErrors)
	}
	var out txnAnswer
	for _, e := range res.TxnResults {
		kv := toKV(e)
		out.Results = append(out.Results, txnResultJSON{KV: &kv})
	}
	return writeJSON(c, http.StatusOK, out)
}

// txnConflict answers 409 with the failed ops (S44).
func txnConflict(c *call, errs []model.TxnError) error {
	buf, err := json.Marshal(txnAnswer{Errors: errs})
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
		if op.Verb == model.KVLock && op.Key == key {
			return i
		}
	}
	return 0
}
