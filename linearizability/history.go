package linearizability

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/tenurekv/tenure/model"
)

// History is what a simulator or an implementation test records: client
// operations with their call and return times, server-initiated events, and
// the faults that were injected (for the failure report only).
//
// Its JSON form is the encoding/json form of these types; field names are
// Go's, like the model's and Consul's wire shapes.
type History struct {
	// Setup is the catalog in force before the first operation: Register
	// commands only (the nodes and checks sessions bind to).
	Setup []model.Command `json:",omitempty"`
	Ops   []Op
	// Events are server-initiated invalidations (TTL expiry, check critical,
	// node deregistered), each known only to lie within a time window.
	Events []Event `json:",omitempty"`
	// Faults are shown on the failure visualisation; they do not affect the check.
	Faults []Fault `json:",omitempty"`
	// LockDelaySlack widens every lock-delay window by this much on both
	// sides. Lock-delay runs on the leader's clock from that server's own
	// apply of the invalidation (S22): set this to the most a server clock
	// drifts from the recorder's over one delay, plus the most a follower
	// that may become leader applies an invalidation after it returned.
	LockDelaySlack Nanos `json:",omitempty"`
	// LockDelayMayBeLost disables the "no acquire inside a lock-delay" check,
	// for runs where a server may have restored a snapshot holding the
	// invalidation, which forgets the delay (S22, S49). Refusals are still
	// checked: they must fall inside a possible delay.
	LockDelayMayBeLost bool `json:",omitempty"`
}

// Op is one client operation.
type Op struct {
	// Client identifies the caller; one client's operations should not
	// overlap. Zero-based.
	Client int
	// Call and Return are when the request was sent and the answer received,
	// in nanoseconds on one clock (virtual or real).
	Call   Nanos
	Return Nanos
	// Unknown marks an operation whose outcome the client never learned (a
	// timeout, a lost reply, an error that does not prove the request was
	// not applied). It may have taken effect at any time after Call, or
	// never; Return and Output are ignored.
	Unknown bool `json:",omitempty"`
	Input   Input
	Output  Output
}

// Input is what the client asked: exactly one of Command and Read.
type Input struct {
	// Command is a write as the server applies it, with defaults filled in
	// (a session create carries the effective Node, Checks, LockDelay,
	// Behavior). A create's ID is empty: the server chooses it and Output
	// carries it. A lock's LockDelaySeen is ignored (a server-side index).
	Command *model.Command `json:",omitempty"`
	// Read is a query that changes nothing.
	Read *Read `json:",omitempty"`
}

// ReadKind names a read.
type ReadKind string

// Reads a client can make. Reads must be linearizable on the server
// (?consistent, or the default mode with a stable leader): stale reads do
// not belong in a history.
const (
	ReadKey     ReadKind = "get"           // GET /v1/kv/<Key>
	ReadPrefix  ReadKind = "list"          // GET /v1/kv/<Key>?recurse
	ReadSession ReadKind = "session-info"  // GET /v1/session/info/<Session>
	RenewSess   ReadKind = "session-renew" // PUT /v1/session/renew/<Session>
)

// Read is a read: Key is the key or prefix, Session the session ID.
type Read struct {
	Kind    ReadKind
	Key     string `json:",omitempty"`
	Session string `json:",omitempty"`
}

// Output is what the client was answered.
//
// Raft indexes are server-chosen and not known in advance: ModifyIndex and
// CreateIndex in Entries are compared only relatively (see DESIGN.md), and
// 0 means "not recorded".
type Output struct {
	// OK is the boolean answer of cas, lock, unlock and delete-cas; true for
	// any other successful write and for a committed txn; for a read, the key
	// or session was found (renew answered 200).
	OK bool `json:",omitempty"`
	// Error is a definite rejection (4xx, or a 5xx the model also gives, such
	// as a session create on an unknown node). Errors that do not prove the
	// request was not applied (no leader, timeout) must be recorded as
	// Unknown instead. The text is shown, not compared.
	Error string `json:",omitempty"`
	// SessionID is the ID a successful create returned.
	SessionID string `json:",omitempty"`
	// Entries are a read's entries (one for get; the listed ones, sorted by
	// key, for list), a committed txn's KV results in op order (its node,
	// service and check results are not recorded), or the one
	// entry a granted acquire named (S64: LockIndex, Session and
	// ModifyIndex; Value nil, CreateIndex 0, Flags the request's).
	Entries []model.KVEntry `json:",omitempty"`
	// Session is what session-info or renew returned, when found.
	Session *model.Session `json:",omitempty"`
	// TxnErrors are an aborted txn's errors (409).
	TxnErrors []model.TxnError `json:",omitempty"`
	// LockDelayed says the server reported a lock-delay refusal: the
	// X-Tenure-Lock-Delay header on an acquire answering false, or a txn 409
	// whose error says "due to lock delay" (S25). Without it, a false
	// acquire on a free key is still taken as a lock-delay refusal.
	LockDelayed bool `json:",omitempty"`
}

// Event is a server-initiated change, known to have happened at some
// instant within [Earliest, Latest]: the window should cover every
// server's apply of it, since each arms its own lock-delay (S22). It is exactly one of Command (a
// catalog change or a destroy, whose invalidations the model works out) and
// Sessions (the sessions one trigger invalidated, applied as one atomic step).
type Event struct {
	// Kind is a label for people: "ttl-expiry", "check-critical", "node-deregister"…
	Kind     string
	Earliest Nanos
	Latest   Nanos
	Command  *model.Command `json:",omitempty"`
	Sessions []string       `json:",omitempty"`
	// Invalidated, when recorded, is the sessions the server reported
	// invalidated; it must match the model.
	Invalidated []string `json:",omitempty"`
}

// Fault is an injected fault, drawn on the failure visualisation.
type Fault struct {
	Name    string
	Start   Nanos
	End     Nanos
	Details string `json:",omitempty"`
}

// Nanos is a time or duration in nanoseconds. In JSON it is an integer; a
// Go duration string ("1.5s") is accepted too and read as that many
// nanoseconds since zero, which keeps hand-written histories readable.
type Nanos int64

// UnmarshalJSON accepts an integer or a duration string.
func (n *Nanos) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("time %s: %w", b, err)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("time %q: %w", s, err)
		}
		*n = Nanos(d)
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("time %s: want integer nanoseconds or a duration string: %w", b, err)
	}
	*n = Nanos(v)
	return nil
}

// ReadHistoryFile decodes a history from a JSON file.
func ReadHistoryFile(path string) (History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return History{}, fmt.Errorf("read history: %w", err)
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return History{}, fmt.Errorf("decode history %s: %w", path, err)
	}
	return h, nil
}

// WriteFile writes the history as indented JSON.
func (h History) WriteFile(path string) error {
	b, err := json.MarshalIndent(h, "", " ")
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}
