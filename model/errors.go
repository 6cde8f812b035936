package model

import "fmt"

// ErrorKind classifies a rejected command so that a server can map it to a
// status code. The model never mixes a rejection with a state change.
type ErrorKind int

// Kinds of rejection.
const (
	// ErrInvalid: the input itself is wrong (bad TTL, unknown behaviour, empty key…).
	ErrInvalid ErrorKind = iota + 1
	// ErrMissing: the input names something that does not exist (node, check, session).
	ErrMissing
	// ErrConflict: the input is well formed but the state forbids it (critical check).
	ErrConflict
	// ErrTooLarge: a value or txn over its limit.
	ErrTooLarge
	// ErrInternal: the caller broke the model's calling contract (index not increasing).
	ErrInternal
)

// Error is a rejected command: a kind and Consul's reason text.
type Error struct {
	Kind ErrorKind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// TxnError is one failed operation of a transaction, in Consul's shape.
type TxnError struct {
	OpIndex int
	What    string
}

// Result is what Apply answers.
type Result struct {
	// Index is the index the command was applied at.
	Index uint64
	// OK is the boolean answer of cas, lock, unlock and delete-cas; true otherwise on success.
	OK bool
	// Err is set when the command was rejected; the state is then unchanged.
	Err *Error
	// SessionID is the created session's ID.
	SessionID string
	// QueryID is the prepared query a query write created, replaced or deleted.
	QueryID string
	// ACLID is the token (AccessorID), policy or role an ACL write wrote
	// or deleted.
	ACLID string
	// TxnResults are what a transaction returns, in op order: one KV
	// entry per key an op names (none for deletes), the node, service or
	// check a get, set or cas names, nothing for the other ops.
	TxnResults []TxnResult
	// TxnErrors are a failed transaction's per-op reasons; the state is then unchanged.
	TxnErrors []TxnError
	// Invalidated lists the sessions this command invalidated, sorted.
	Invalidated []string
	// QueriesDeleted lists the prepared queries deleted with them, sorted (S58).
	QueriesDeleted []string
	// LockDelays lists the keys whose lock-delay the invalidations arm, sorted by key (S22).
	LockDelays []LockDelay
	// KeysChanged lists, sorted, the keys whose entry this command wrote or
	// deleted (invalidations included); empty when it failed. A server wakes
	// the blocking reads of exactly these keys (S46).
	KeysChanged []string
	// Locked is the entry a stand-alone lock left when it succeeded: its
	// LockIndex, Session and ModifyIndex name the holding period the caller
	// now has (S64). Zero otherwise, and for a lock inside a transaction,
	// whose entry is in TxnResults.
	Locked KVEntry
	// DelayRefused lists keys whose lock this command refused because an
	// invalidation the leader's check could not see armed a delay (S22).
	DelayRefused []string
}

// TxnResult is one result of a transaction; exactly one field is set.
type TxnResult struct {
	KV      *KVEntry `json:",omitempty"`
	Node    *Node    `json:",omitempty"`
	Service *Service `json:",omitempty"`
	Check   *Check   `json:",omitempty"`
}

// KVResults are the KV entries among a transaction's results, in op order.
func (r Result) KVResults() []KVEntry {
	var out []KVEntry
	for _, t := range r.TxnResults {
		if t.KV != nil {
			out = append(out, *t.KV)
		}
	}
	return out
}

// Failed reports whether the command was rejected or its transaction aborted.
func (r Result) Failed() bool { return r.Err != nil || len(r.TxnErrors) > 0 }
