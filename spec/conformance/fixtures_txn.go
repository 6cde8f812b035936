package conformance

import (
	"net/http"

	"github.com/hashicorp/consul/api"
)

// TxnKV is one KV op of PUT /v1/txn.
type TxnKV struct {
	Verb    string
	Key     string
	Value   []byte `json:",omitempty"`
	Flags   uint64 `json:",omitempty"`
	Index   uint64 `json:",omitempty"`
	Session string `json:",omitempty"`
}

// TxnError is one entry of a failed txn's Errors.
type TxnError struct {
	OpIndex int
	What    string
}

// TxnAnswer is the decoded body of a txn answer (200 or 409).
type TxnAnswer struct {
	Results []struct{ KV *api.KVPair }
	Errors  []TxnError
}

// Txn sends KV ops; it decodes the body of a 200 or 409 answer.
func (t *T) Txn(ops ...TxnKV) (*resp, TxnAnswer) {
	wrapped := make([]map[string]TxnKV, len(ops))
	for i, op := range ops {
		wrapped[i] = map[string]TxnKV{"KV": op}
	}
	r := t.DoJSON(http.MethodPut, "/v1/txn", wrapped)
	var a TxnAnswer
	if r.Code == 200 || r.Code == 409 {
		t.decode("txn", r, &a)
	}
	return r, a
}
