package conformance

import (
	"net/http"

	"github.com/hashicorp/consul/api"
)

// txnKV is one KV op of PUT /v1/txn.
type txnKV struct {
	Verb    string
	Key     string
	Value   []byte `json:",omitempty"`
	Flags   uint64 `json:",omitempty"`
	Index   uint64 `json:",omitempty"`
	Session string `json:",omitempty"`
}

// txnError is one entry of a failed txn's Errors.
type txnError struct {
	OpIndex int
	What    string
}

// txnAnswer is the decoded body of a txn answer (200 or 409).
type txnAnswer struct {
	Results []struct{ KV *api.KVPair }
	Errors  []txnError
}

// Txn sends KV ops; it decodes the body of a 200 or 409 answer.
func (t *caseT) Txn(ops ...txnKV) (*resp, txnAnswer) {
	wrapped := make([]map[string]txnKV, len(ops))
	for i, op := range ops {
		wrapped[i] = map[string]txnKV{"KV": op}
	}
	r := t.DoJSON(http.MethodPut, "/v1/txn", wrapped)
	var a txnAnswer
	if r.Code == 200 || r.Code == 409 {
		t.decode("txn", r, &a)
	}
	return r, a
}
